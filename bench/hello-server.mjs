// The baseline: a bare Fastify hello-world, so edgeward's figures can be read against the framework's own.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ listen: `http://127.0.0.1:${app.server.address().port}` })}\n`);
