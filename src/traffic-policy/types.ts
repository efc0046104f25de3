import type { z } from 'zod';
import type { policyModuleInput } from '../schemas/edge-modules.js';
import type { PolicyEvaluationError, PolicyPath } from './errors.js';

/** The policy module as written, stored or read back (`config` may be null or absent). */
export type PolicyDocument = z.input<typeof policyModuleInput>;

/**
 * `http`: an HTTPS route's policy, run on each request (inbound) and response (outbound).
 * `connection`: a TCP or TLS edge's policy, run once per accepted connection.
 */
export type PolicyPhase = 'http' | 'connection';

/** Header fields as Node gives them: any case, one value or several. */
export type HeaderFields = Record<string, string | string[] | undefined>;

/** What the edge knows about a request when the inbound rules run. */
export interface PolicyRequest {
  method: string;
  /** Full URL, e.g. `https://app.example.com/a/b?x=1`. */
  url: string;
  /** Path without the query, e.g. `/a/b`. */
  path: string;
  /** Raw query without the `?`, empty when there is none. */
  query: string;
  /** Host name the client asked for, without the port. */
  host: string;
  headers: HeaderFields;
  clientIp: string;
  clientPort: number;
  /** Negotiated TLS version such as `1.3`; absent on plain connections. */
  tlsVersion?: string;
}

/** The upstream's response, as the outbound rules see it. */
export interface PolicyResponse {
  status: number;
  headers: HeaderFields;
}

/** A TCP or TLS connection the edge has just accepted. */
export interface PolicyConnection {
  clientIp: string;
  clientPort: number;
  tlsVersion?: string;
}

/** A response the edge sends instead of (inbound) or in place of (outbound) the upstream's. */
export interface PolicyReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * What the rules decided. The edge applies `removeHeaders` first, then `setHeaders` (names are
 * lower-case), unless `respond` is set: then it sends that reply and nothing else.
 */
export interface OutboundResult {
  respond?: PolicyReply;
  setHeaders: Record<string, string>;
  removeHeaders: string[];
}

export interface InboundResult extends OutboundResult {
  /** New request target (path, then `?query` when there is one) after `url-rewrite` actions. */
  rewrittenPath?: string;
}

export interface ConnectionResult {
  allowed: boolean;
  /** Name of the rule whose `deny` refused the connection. */
  deniedBy?: string;
}

/** What a `log` action emits. */
export interface PolicyLogEntry {
  rule: string;
  /** The action's place, e.g. `['inbound', 0, 'actions', 1]`. */
  path: PolicyPath;
  metadata: Record<string, unknown>;
  request: { method: string; url: string; clientIp: string };
}

export interface CompileOptions {
  phase: PolicyPhase;
  /** Milliseconds since the epoch; rate limits count with it. Defaults to `Date.now`. */
  now?: () => number;
  /** Runtime failures (an expression that threw): the rule or action did not apply. */
  onError?: (error: PolicyEvaluationError) => void;
  /** Entries of `log` actions. */
  onLog?: (entry: PolicyLogEntry) => void;
}

/** A policy ready to run. It keeps the rate limiters' counters, so one instance serves one edge process. */
export interface CompiledPolicy {
  readonly phase: PolicyPhase;
  readonly enabled: boolean;
  /** Inbound rules in order, until a terminal action (`http` phase). */
  inbound(request: PolicyRequest): InboundResult;
  /** Outbound rules in order, until a terminal action (`http` phase). */
  outbound(request: PolicyRequest, response: PolicyResponse): OutboundResult;
  /** Inbound rules in order; the first `deny` refuses the connection (`connection` phase). */
  connection(connection: PolicyConnection): ConnectionResult;
}
