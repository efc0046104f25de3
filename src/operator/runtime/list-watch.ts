import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeApi } from './kube-api.js';
import { type ListPage, ResourceClient } from './resource-client.js';
import { apiVersionOf, type ResourceKind, resourcePath } from './resource-types.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** The `object` of a watch ERROR event. */
export interface WatchStatus {
  kind?: 'Status';
  code?: number;
  reason?: string;
  message?: string;
}

export interface WatchHandle {
  abort(): void;
}

/**
 * What an informer needs from the API server, per namespace (undefined = all namespaces).
 * The Kubernetes implementation is `kubeListWatch`; tests inject fakes to script failures.
 */
export interface ListWatchSource<T extends KubernetesObject> {
  list(namespace: string | undefined, options: { limit: number; continue?: string }): Promise<ListPage<T>>;
  /**
   * Starts a watch from `resourceVersion`. `onDone(null)` when the server ends the stream
   * normally; `onDone(error)` (with `statusCode`) when it refuses or breaks it.
   */
  watch(
    namespace: string | undefined,
    options: { resourceVersion: string; timeoutSeconds: number },
    onEvent: (type: WatchEventType, object: T | WatchStatus) => void,
    onDone: (error: unknown) => void,
  ): Promise<WatchHandle>;
}

export interface SelectorOptions {
  labelSelector?: string;
  fieldSelector?: string;
}

/** List and watch one kind through `KubeApi` (rate-limited; lists are measured). */
export function kubeListWatch<T extends KubernetesObject>(
  api: KubeApi,
  kind: ResourceKind,
  selectors: SelectorOptions = {},
): ListWatchSource<T> {
  const client = new ResourceClient<T>(api, kind);
  const apiVersion = apiVersionOf(kind);
  return {
    list: (namespace, options) => client.list(namespace, { ...selectors, ...options }),
    watch: (namespace, options, onEvent, onDone) =>
      api.watch(
        resourcePath(kind, { namespace }),
        {
          ...selectors,
          resourceVersion: options.resourceVersion,
          timeoutSeconds: options.timeoutSeconds,
          allowWatchBookmarks: true,
        },
        (type, object) => {
          // Watch events carry apiVersion/kind, but fill them in for symmetry with list items.
          if (type !== 'ERROR' && typeof object === 'object' && object !== null) {
            const typed = object as T;
            typed.apiVersion ??= apiVersion;
            typed.kind ??= kind.kind;
          }
          onEvent(type as WatchEventType, object as T | WatchStatus);
        },
        onDone,
      ),
  };
}
