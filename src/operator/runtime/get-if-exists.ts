import type { KubernetesObject } from '@kubernetes/client-node';
import { isKubeNotFound } from './kube-errors.js';
import type { KubeResources } from './resource-client.js';

/**
 * The object, or undefined when there is none: for callers to whom a missing object is an answer
 * (a Secret not created yet, nothing to release, a CR deleted meanwhile), not a failure. Any other
 * failure is thrown as `failure` (default `reading <Kind> <name>`) with the API error as its cause.
 */
export async function getIfExists<T extends KubernetesObject>(
  client: KubeResources<T>,
  namespace: string | undefined,
  name: string,
  failure = `reading ${client.kind.kind} ${name}`,
): Promise<T | undefined> {
  try {
    return await client.get(namespace, name);
  } catch (error) {
    if (isKubeNotFound(error)) return undefined;
    throw new Error(failure, { cause: error });
  }
}
