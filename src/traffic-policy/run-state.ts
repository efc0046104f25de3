import type { PolicyEvaluationError } from './errors.js';
import type {
  PolicyConnection,
  PolicyLogEntry,
  PolicyReply,
  PolicyRequest,
  PolicyResponse,
} from './types.js';
import {
  type Activation,
  connectionVariables,
  requestVariables,
  responseVariables,
  type Stage,
} from './variables.js';

export interface RunHooks {
  now(): number;
  onError(error: PolicyEvaluationError): void;
  onLog(entry: PolicyLogEntry): void;
}

/** What the rules see and what their actions have decided so far, for one request or connection. */
export class RunState {
  respond?: PolicyReply;
  denied = false;
  readonly setHeaders: Record<string, string> = {};
  readonly removeHeaders: string[] = [];
  /** Set once a `url-rewrite` changed the target. */
  rewritten = false;
  private target: { path: string; query: string };
  private activation?: Activation;

  constructor(
    readonly stage: Stage,
    readonly hooks: RunHooks,
    readonly connection: PolicyConnection,
    readonly request?: PolicyRequest,
    readonly response?: PolicyResponse,
  ) {
    this.target = { path: request?.path ?? '', query: request?.query ?? '' };
  }

  /** The variables, rebuilt after a rewrite so later rules see the new path. */
  vars(): Activation {
    if (!this.activation) {
      const activation: Activation = { conn: connectionVariables(this.connection) };
      if (this.request) activation.req = { ...requestVariables(this.request, this.target), url: this.url };
      if (this.response) activation.res = responseVariables(this.response);
      this.activation = activation;
    }
    return this.activation;
  }

  /** Path, then `?query` when there is one. */
  get requestTarget(): string {
    return this.target.query === '' ? this.target.path : `${this.target.path}?${this.target.query}`;
  }

  /** The request's URL with the current target. */
  get url(): string {
    const original = this.request?.url ?? '';
    if (!this.rewritten) return original;
    try {
      return `${new URL(original).origin}${this.requestTarget}`;
    } catch {
      return original;
    }
  }

  rewrite(target: string): void {
    const mark = target.indexOf('?');
    this.target =
      mark === -1
        ? { path: target, query: '' }
        : { path: target.slice(0, mark), query: target.slice(mark + 1) };
    this.rewritten = true;
    this.activation = undefined;
  }

  /** The edge removes first, then sets: a header removed after it was set is simply not set. */
  setHeader(name: string, value: string): void {
    this.setHeaders[name.toLowerCase()] = value;
  }

  removeHeader(name: string): void {
    const lower = name.toLowerCase();
    delete this.setHeaders[lower];
    if (!this.removeHeaders.includes(lower)) this.removeHeaders.push(lower);
  }
}
