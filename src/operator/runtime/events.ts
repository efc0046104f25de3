import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubernetesObject } from '@kubernetes/client-node';
import { isCamelCaseReason } from './conditions.js';
import type { KubeApi } from './kube-api.js';
import { isKubeNotFound } from './kube-errors.js';
import { type Logger, silentLogger } from './logger.js';
import { redactText } from './redaction.js';
import { ResourceClient } from './resource-client.js';
import { EVENT } from './resource-types.js';

export type EventType = 'Normal' | 'Warning';

/** The core/v1 Event fields this recorder writes. */
export interface CoreEvent extends KubernetesObject {
  involvedObject: {
    apiVersion?: string;
    kind?: string;
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
  };
  reason: string;
  message: string;
  type: EventType;
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  source: { component: string; host?: string };
  reportingComponent: string;
  reportingInstance: string;
}

export interface EventRecorderOptions {
  api: KubeApi;
  /** `source.component` / `reportingComponent`. Default `edgeward-operator`. */
  component?: string;
  /** `reportingInstance`; default the host name (the pod name in a cluster). */
  instance?: string;
  /** Aggregation memory: distinct events remembered. Default 4096. */
  maxRemembered?: number;
  log?: Logger;
  now?: () => Date;
}

const MAX_MESSAGE = 1024;

/** What controllers report Events through; `EventRecorder` writes them to the cluster. */
export interface EventReporter {
  normal(object: KubernetesObject, reason: string, message: string): Promise<void>;
  warning(object: KubernetesObject, reason: string, message: string): Promise<void>;
}

/**
 * Kubernetes Events (core/v1) about our objects, as `kubectl describe` shows them. Identical
 * events (same object uid, type, reason and message) are aggregated: the first is created, the
 * next ones increment its `count` and `lastTimestamp`, so a reconcile failing every backoff step
 * makes one Event, not hundreds. Messages go through `redactText` and are bounded; a reason must
 * be CamelCase. Recording never throws: an Event is not worth failing a reconcile for.
 */
export class EventRecorder implements EventReporter {
  readonly #client: ResourceClient<CoreEvent>;
  readonly #component: string;
  readonly #instance: string;
  readonly #max: number;
  readonly #log: Logger;
  readonly #now: () => Date;
  /** aggregation key -> the Event that represents it (Map order = least recently used first) */
  readonly #seen = new Map<string, { namespace: string; name: string; count: number }>();
  /** Serialises records of one aggregation key, so two identical events do not both create. */
  readonly #pending = new Map<string, Promise<void>>();

  constructor(options: EventRecorderOptions) {
    this.#client = new ResourceClient<CoreEvent>(options.api, EVENT);
    this.#component = options.component ?? 'edgeward-operator';
    this.#instance = options.instance ?? hostname();
    this.#max = options.maxRemembered ?? 4096;
    this.#log = options.log ?? silentLogger;
    this.#now = options.now ?? (() => new Date());
  }

  normal(object: KubernetesObject, reason: string, message: string): Promise<void> {
    return this.record(object, 'Normal', reason, message);
  }

  warning(object: KubernetesObject, reason: string, message: string): Promise<void> {
    return this.record(object, 'Warning', reason, message);
  }

  record(object: KubernetesObject, type: EventType, reason: string, message: string): Promise<void> {
    if (!isCamelCaseReason(reason)) {
      this.#log.error({ reason }, 'event reason is not CamelCase; event dropped');
      return Promise.resolve();
    }
    const text = redactText(message).slice(0, MAX_MESSAGE);
    const key = [object.metadata?.uid ?? keyless(object), type, reason, text].join('\u0000');
    const previous = this.#pending.get(key) ?? Promise.resolve();
    const next = previous
      .then(() => this.#write(key, object, type, reason, text))
      .catch((error: unknown) => {
        this.#log.warn({ err: error, reason }, 'recording an event failed');
      })
      .finally(() => {
        if (this.#pending.get(key) === next) this.#pending.delete(key);
      });
    this.#pending.set(key, next);
    return next;
  }

  async #write(
    key: string,
    object: KubernetesObject,
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void> {
    const now = this.#now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z');
    const seen = this.#seen.get(key);
    if (seen) {
      try {
        await this.#client.patch(seen.namespace, seen.name, { count: seen.count + 1, lastTimestamp: now });
        seen.count += 1;
        this.#remember(key, seen);
        return;
      } catch (error) {
        // Events expire (1 h by default); a gone one is simply created anew.
        if (!isKubeNotFound(error)) throw error;
        this.#seen.delete(key);
      }
    }
    const namespace = object.metadata?.namespace || 'default';
    const name = `${object.metadata?.name ?? 'object'}.${Date.now().toString(16)}${randomBytes(2).toString('hex')}`;
    const event: CoreEvent = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: object.metadata?.name,
        namespace: object.metadata?.namespace,
        uid: object.metadata?.uid,
        resourceVersion: object.metadata?.resourceVersion,
      },
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: this.#component, host: this.#instance },
      reportingComponent: this.#component,
      reportingInstance: this.#instance,
    };
    await this.#client.create(event);
    this.#remember(key, { namespace, name, count: 1 });
  }

  #remember(key: string, entry: { namespace: string; name: string; count: number }): void {
    this.#seen.delete(key);
    this.#seen.set(key, entry);
    if (this.#seen.size > this.#max) {
      const oldest = this.#seen.keys().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
  }
}

function keyless(object: KubernetesObject): string {
  return `${object.kind}/${object.metadata?.namespace}/${object.metadata?.name}`;
}
