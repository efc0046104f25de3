import type pg from 'pg';

/**
 * PostgreSQL refuses to run a prepared `select *` whose table gained or lost a column since it was
 * prepared: "cached plan must not change result type", SQLSTATE 0A000.
 */
function isResultTypeChanged(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === '0A000' && typeof message === 'string' && message.includes('must not change result type');
}

/**
 * Runs compiled reads as named (prepared) statements on the pool, so PostgreSQL parses and plans
 * each once per connection instead of on every request. A name stands for one SQL text for the
 * life of the process. When a statement fails because its table changed shape under it (a newer
 * replica's migration added a column during a rolling upgrade), the text gets a new name, which
 * every connection prepares afresh, and the read runs again once.
 */
export class PgPreparedReader {
  readonly #pool: pg.Pool;
  readonly #names = new Map<string, string>();
  #statements = 0;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async readRows<R>(sql: string, parameters: readonly unknown[]): Promise<R[]> {
    try {
      return await this.#run<R>(sql, parameters);
    } catch (error) {
      if (!isResultTypeChanged(error)) throw error;
      this.#names.set(sql, this.#newName());
      return await this.#run<R>(sql, parameters);
    }
  }

  async #run<R>(sql: string, parameters: readonly unknown[]): Promise<R[]> {
    let name = this.#names.get(sql);
    if (name === undefined) {
      name = this.#newName();
      this.#names.set(sql, name);
    }
    const result = await this.#pool.query({ name, text: sql, values: [...parameters] });
    return result.rows as R[];
  }

  #newName(): string {
    this.#statements += 1;
    return `edgeward_read_${this.#statements}`;
  }
}
