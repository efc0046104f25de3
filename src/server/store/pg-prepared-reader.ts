import type pg from 'pg';

/**
 * PostgreSQL refuses to run a prepared `select *` whose table gained or lost a column since it was
 * prepared ("cached plan must not change result type"). Told by the code and the function that
 * raises it, which, unlike the message, are not translated under another `lc_messages`.
 */
function isResultTypeChanged(error: unknown): boolean {
  const { code, routine } = error as { code?: unknown; routine?: unknown };
  return code === '0A000' && routine === 'RevalidateCachedQuery';
}

/**
 * Runs compiled reads as named (prepared) statements on the pool, so PostgreSQL parses and plans
 * each once per connection instead of on every request. A name stands for one SQL text for the
 * life of the process. When a statement fails because its table changed shape under it (a newer
 * replica's migration added a column during a rolling upgrade), the text gets a new name, which
 * every connection prepares afresh, and the read runs again once. A superseded name stays
 * prepared on the connections that had it until they close: a few per migration, never reused.
 */
export class PgPreparedReader {
  readonly #pool: pg.Pool;
  readonly #names = new Map<string, string>();
  #statements = 0;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async readRows<R>(sql: string, parameters: readonly unknown[]): Promise<R[]> {
    const name = this.#nameOf(sql);
    try {
      return await this.#run<R>(name, sql, parameters);
    } catch (error) {
      if (!isResultTypeChanged(error)) throw error;
      // Requests in flight under the old name all fail alike: the first renames, the rest follow.
      if (this.#names.get(sql) === name) this.#names.set(sql, this.#newName());
      return await this.#run<R>(this.#nameOf(sql), sql, parameters);
    }
  }

  /**
   * Released without the error, as Kysely does: `pool.query` would close the connection on any
   * failed query, and with it every statement the connection had prepared.
   */
  async #run<R>(name: string, sql: string, parameters: readonly unknown[]): Promise<R[]> {
    const client = await this.#pool.connect();
    try {
      const result = await client.query({ name, text: sql, values: [...parameters] });
      return result.rows as R[];
    } finally {
      client.release();
    }
  }

  #nameOf(sql: string): string {
    let name = this.#names.get(sql);
    if (name === undefined) {
      name = this.#newName();
      this.#names.set(sql, name);
    }
    return name;
  }

  #newName(): string {
    this.#statements += 1;
    return `edgeward_read_${this.#statements}`;
  }
}
