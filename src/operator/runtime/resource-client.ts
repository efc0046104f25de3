import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeApi } from './kube-api.js';
import { apiVersionOf, type ResourceKind, resourcePath } from './resource-types.js';

export interface ListPage<T> {
  items: T[];
  /** The collection's resourceVersion: where a watch continues from. */
  resourceVersion: string;
  /** Set when more pages follow. */
  continue?: string;
}

export interface ListOptions {
  limit?: number;
  continue?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export type JsonPatchOperation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string };

interface ListBody<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

/**
 * Typed CRUD of one kind: what controllers and the runtime's helpers (finalizers, status writer)
 * are written against. `ResourceClient` does it over HTTP; unit tests use an in-memory fake
 * (test/support/fake/resource-client.ts).
 */
export interface KubeResources<T extends KubernetesObject> {
  readonly kind: ResourceKind;
  get(namespace: string | undefined, name: string, signal?: AbortSignal): Promise<T>;
  list(namespace: string | undefined, options?: ListOptions): Promise<ListPage<T>>;
  create(object: T): Promise<T>;
  replace(object: T): Promise<T>;
  replaceStatus(object: T): Promise<T>;
  patch(
    namespace: string | undefined,
    name: string,
    patch: JsonPatchOperation[] | Record<string, unknown>,
    options?: { subresource?: string },
  ): Promise<T>;
  delete(
    namespace: string | undefined,
    name: string,
    preconditions?: { uid?: string; resourceVersion?: string },
  ): Promise<void>;
}

/** `KubeResources` through `KubeApi` (so rate-limited and measured), any group/subresource. */
export class ResourceClient<T extends KubernetesObject> implements KubeResources<T> {
  readonly api: KubeApi;
  readonly kind: ResourceKind;

  constructor(api: KubeApi, kind: ResourceKind) {
    this.api = api;
    this.kind = kind;
  }

  get(namespace: string | undefined, name: string, signal?: AbortSignal): Promise<T> {
    return this.api.request<T>('GET', resourcePath(this.kind, { namespace, name }), { signal });
  }

  /** One page. Items get `apiVersion`/`kind` filled in (list responses leave them out). */
  async list(namespace: string | undefined, options: ListOptions = {}): Promise<ListPage<T>> {
    const body = await this.api.request<ListBody<T>>('GET', resourcePath(this.kind, { namespace }), {
      query: { ...options },
    });
    const apiVersion = apiVersionOf(this.kind);
    const items = (body.items ?? []).map((item) => ({ ...item, apiVersion, kind: this.kind.kind }));
    const page: ListPage<T> = { items, resourceVersion: body.metadata?.resourceVersion ?? '' };
    if (body.metadata?.continue) page.continue = body.metadata.continue;
    return page;
  }

  create(object: T): Promise<T> {
    return this.api.request<T>('POST', resourcePath(this.kind, { namespace: object.metadata?.namespace }), {
      body: object,
    });
  }

  /** PUT; fails with 409 when `metadata.resourceVersion` is stale (optimistic concurrency). */
  replace(object: T): Promise<T> {
    return this.api.request<T>('PUT', this.#objectPath(object), { body: object });
  }

  /** PUT of the status subresource: only `status` changes; 409 when the resourceVersion is stale. */
  replaceStatus(object: T): Promise<T> {
    return this.api.request<T>('PUT', this.#objectPath(object, 'status'), { body: object });
  }

  /** JSON patch (RFC 6902; `test` ops make it conditional) or JSON merge patch (RFC 7386). */
  patch(
    namespace: string | undefined,
    name: string,
    patch: JsonPatchOperation[] | Record<string, unknown>,
    options: { subresource?: string } = {},
  ): Promise<T> {
    const contentType = Array.isArray(patch) ? 'application/json-patch+json' : 'application/merge-patch+json';
    return this.api.request<T>(
      'PATCH',
      resourcePath(this.kind, { namespace, name, subresource: options.subresource }),
      { body: patch, contentType },
    );
  }

  async delete(
    namespace: string | undefined,
    name: string,
    preconditions?: { uid?: string; resourceVersion?: string },
  ): Promise<void> {
    await this.api.request('DELETE', resourcePath(this.kind, { namespace, name }), {
      body: preconditions ? { apiVersion: 'v1', kind: 'DeleteOptions', preconditions } : undefined,
    });
  }

  #objectPath(object: T, subresource?: string): string {
    const name = object.metadata?.name;
    if (!name) throw new Error(`${this.kind.kind} without metadata.name`);
    return resourcePath(this.kind, { namespace: object.metadata?.namespace, name, subresource });
  }
}
