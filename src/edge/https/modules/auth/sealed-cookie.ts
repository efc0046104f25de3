import type { z } from 'zod';
import { SecretBox } from '../../../../crypto/secret-box.js';

/**
 * JSON sealed with AES-256-GCM (the server's SecretBox). The context is authenticated data: it
 * binds a cookie to its purpose, route and identity provider, so one route's cookie (or a cookie
 * from before the provider or its access rules changed) never opens on another.
 */
export class CookieSealer {
  readonly #box: SecretBox;

  constructor(key: Buffer) {
    this.#box = new SecretBox(key);
  }

  seal(value: unknown, context: string): string {
    return this.#box.seal(JSON.stringify(value), context);
  }

  /** undefined for anything forged, tampered with, sealed for another context or malformed. */
  open<T extends z.ZodType>(sealed: string | undefined, context: string, schema: T): z.output<T> | undefined {
    if (!sealed) return undefined;
    try {
      const parsed = schema.safeParse(JSON.parse(this.#box.open(sealed, context)));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }
}
