import Fastify from 'fastify';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { LazyRequestLogger, lazyChildLoggerFactory } from './lazy-request-logger.js';

function capturedPino(level: string) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe('the lazy request logger', () => {
  it('writes nothing and makes no child below the level, and the request id on what it writes', () => {
    const { logger, lines } = capturedPino('warn');
    let children = 0;
    const child = logger.child.bind(logger);
    logger.child = ((...args: Parameters<typeof child>) => {
      children++;
      return child(...args);
    }) as typeof logger.child;
    const requestLogger = new LazyRequestLogger(logger, { reqId: 'op_1' }, {});
    requestLogger.info({ req: 'x' }, 'incoming request');
    requestLogger.debug('details');
    expect(children).toBe(0);
    expect(lines).toEqual([]);
    requestLogger.warn({ n: 1 }, 'slow: %s', 'store');
    expect(children).toBe(1);
    expect(lines).toMatchObject([{ level: 40, reqId: 'op_1', n: 1, msg: 'slow: store' }]);
    requestLogger.error(new Error('boom'));
    expect(children).toBe(1);
    expect(lines[1]).toMatchObject({ level: 50, reqId: 'op_1', err: { message: 'boom' } });
  });

  it('follows a level of its own, given by Fastify or set later', () => {
    const { logger, lines } = capturedPino('warn');
    const verbose = new LazyRequestLogger(logger, { reqId: 'op_2' }, { level: 'debug' });
    expect(verbose.level).toBe('debug');
    verbose.debug('kept');
    const quiet = new LazyRequestLogger(logger, { reqId: 'op_3' }, {});
    quiet.info('dropped');
    quiet.level = 'info';
    quiet.info('kept too');
    expect(lines.map((line) => [line.reqId, line.msg])).toEqual([
      ['op_2', 'kept'],
      ['op_3', 'kept too'],
    ]);
  });

  it('logs Fastify’s request lines with the request id when info is on, and none at warn', async () => {
    for (const level of ['info', 'warn']) {
      const { logger, lines } = capturedPino(level);
      const app = Fastify({
        loggerInstance: logger,
        childLoggerFactory: lazyChildLoggerFactory,
        genReqId: () => 'op_4',
      });
      app.get('/', async () => ({ ok: true }));
      expect((await app.inject({ url: '/' })).statusCode).toBe(200);
      await app.close();
      const requestLines = lines.filter((line) => line.reqId === 'op_4').map((line) => line.msg);
      expect(requestLines).toEqual(level === 'info' ? ['incoming request', 'request completed'] : []);
    }
  });
});
