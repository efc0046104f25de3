import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EdgewardClient } from '../client/index.js';
import { newSecretToken } from '../server/crypto/tokens.js';
import { startServer } from '../server/start.js';
import { API_KEY_PREFIX } from '../server/store/bootstrap.js';

const KEY_FILE = 'demo-admin-api-key';

/** The demo keeps its admin key beside its data so a second run can still call the server. */
function demoAdminKey(dataDir: string): string {
  const file = join(dataDir, KEY_FILE);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = newSecretToken(API_KEY_PREFIX);
  writeFileSync(file, key, { mode: 0o600 });
  return key;
}

/**
 * `edgeward demo`: the quick start. Starts the server on embedded defaults (SQLite in
 * ./.edgeward-demo), makes a first few requests through the typed client, prints how to call it.
 */
export async function demoCommand(argv: string[]): Promise<number | undefined> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string', default: '.edgeward-demo' },
      port: { type: 'string', default: '4040' },
      exit: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const dataDir = resolve(values['data-dir']);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const adminKey = demoAdminKey(dataDir);
  const server = await startServer({
    dataDir,
    host: '127.0.0.1',
    port: Number(values.port),
    adminApiKey: adminKey,
    logger: false,
  });
  const baseUrl = server.listenUrl;
  const client = new EdgewardClient({ baseUrl, apiKey: adminKey });
  const say = (line = '') => process.stdout.write(`${line}\n`);
  try {
    say(`edgeward server listening on ${baseUrl} (data: ${dataDir})`);
    say();
    const policy = await client.ipPolicies.create({ description: 'demo: office network' });
    const rule = await client.ipPolicyRules.create({
      ip_policy_id: policy.id,
      cidr: '203.0.113.0/24',
      action: 'allow',
    });
    say(`created IP policy       ${policy.id} with rule ${rule.id} (allow ${rule.cidr})`);
    const bot = await client.botUsers.create({ name: 'demo-ci' });
    say(`created bot user        ${bot.id} (${bot.name})`);
    const credential = await client.credentials.create({
      description: 'demo agent',
      acl: ['bind:*.demo.example.com'],
      owner_id: bot.id,
    });
    say(
      `created tunnel credential ${credential.id}, owned by ${credential.owner_id}, acl ${credential.acl.join(' ')}`,
    );
    say(`  its authtoken (shown this once): ${credential.token}`);
    const addr = await client.reservedAddrs.create({ description: 'demo TCP address', region: 'eu' });
    say(`reserved TCP address    ${addr.addr} (${addr.id})`);
    const again = await client.credentials.get(credential.id);
    say(
      `read back the credential: token is now ${JSON.stringify(again.token)} (it is stored only as a hash)`,
    );
    let total = 0;
    for await (const _ of client.credentials.iterate({ limit: 50 })) total++;
    say(`credentials in this account: ${total}`);
    say();
    say('Call it yourself:');
    say(`  export EDGEWARD_API_KEY=${adminKey}`);
    say(`  curl -s ${baseUrl}/ip_policies -H "Authorization: Bearer $EDGEWARD_API_KEY" -H "Svc-Version: 2"`);
    say(
      `  curl -s -X POST ${baseUrl}/credentials -H "Authorization: Bearer $EDGEWARD_API_KEY" -H "Svc-Version: 2" \\`,
    );
    say(
      `       -H "Content-Type: application/json" -d '{"description":"my agent","acl":["bind:*.example.com"]}'`,
    );
    say(`  OpenAPI document: ${baseUrl}/openapi.json`);
  } finally {
    await client.close();
  }
  if (values.exit) {
    await server.app.close();
    return 0;
  }
  say();
  say('The server keeps running; press Ctrl-C to stop it. Data stays in the data directory.');
  const stop = () => {
    server.app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return undefined;
}
