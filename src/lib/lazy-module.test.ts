import { describe, expect, it } from 'vitest';
import { lazyModule } from './lazy-module.js';

describe('lazyModule', () => {
  it('imports once, at the first use', async () => {
    let imports = 0;
    const load = lazyModule('a module', async () => {
      imports++;
      return { answer: 42 };
    });
    expect(imports).toBe(0);
    const [first, second] = await Promise.all([load(), load()]);
    expect(first).toBe(second);
    expect(imports).toBe(1);
  });

  it('names what failed to load, keeps the cause, and tries again on the next use', async () => {
    let attempts = 0;
    const cause = new Error('ERR_MODULE_NOT_FOUND');
    const load = lazyModule('X.509 support', async () => {
      attempts++;
      if (attempts === 1) throw cause;
      return 'loaded';
    });
    const error = await load().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe('could not load X.509 support');
    expect((error as Error).cause).toBe(cause);
    expect(await load()).toBe('loaded');
  });
});
