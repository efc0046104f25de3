import { z } from 'zod';

/**
 * Pieces every edgeward custom resource shares: the API group, the `deletionPolicy`, description
 * and metadata, references to other objects of the same namespace, and the status every controller
 * writes (`id`, `uri`, `observedGeneration`, `conditions`).
 *
 * These schemas describe what Kubernetes stores, so every limit here must be one the apiserver can
 * check (lengths, enums, RE2 patterns); cross-field rules are CEL (see `cel.ts`).
 */
export const API_GROUP = 'edgeward.dev';
export const API_VERSION = 'v1alpha1';
export const CATEGORY = 'edgeward';

/** Kubernetes object names (RFC 1123 subdomain), e.g. of a Secret or another edgeward resource. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const objectName = z.string().min(1).max(253).regex(DNS_SUBDOMAIN);

/** A reference by name to another object of `kind` in the same namespace. */
export function localRef(kind: string) {
  return z
    .object({ name: objectName.meta({ description: `name of the ${kind} in the same namespace` }) })
    .meta({ description: `${kind} in the same namespace, by name` });
}

/** References by name, unique by name (the apiserver refuses a name listed twice). */
export function localRefs(kind: string, max = 100) {
  return z
    .array(localRef(kind))
    .min(1)
    .max(max)
    .meta({
      description: `${kind} objects in the same namespace, by name`,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    });
}

/**
 * A raw server id of a given prefix (`ipp_...`), for resources the cluster does not manage. As in
 * the management API, only the prefix is checked: an unknown id is reported by the server.
 */
export function serverId(prefix: string, what: string) {
  return z
    .string()
    .max(128)
    .regex(new RegExp(`^${prefix}_[0-9A-Za-z]{1,64}$`))
    .meta({ description: `server id of ${what} (${prefix}_...)` });
}

export function serverIds(prefix: string, what: string, max = 100) {
  return z
    .array(serverId(prefix, what))
    .min(1)
    .max(max)
    .meta({
      description: `server ids (${prefix}_...) of ${what} resources`,
      'x-kubernetes-list-type': 'set',
    });
}

/** A key of a Secret in the same namespace: where secret values come from, never inline. */
export const secretKeyRef = z
  .object({
    name: objectName.meta({ description: 'name of the Secret in the same namespace' }),
    key: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[-._a-zA-Z0-9]+$/)
      .meta({ description: 'key of the value in the Secret' }),
  })
  .meta({ description: 'a key of a Secret in the same namespace' });
export type SecretKeyRef = z.output<typeof secretKeyRef>;

/**
 * The management API limits description and metadata in bytes; Kubernetes counts characters, so
 * multi-byte text near the limit passes here and is refused by the server (reported in the status).
 */
export const description = z
  .string()
  .max(255)
  .meta({ description: 'human-readable description, at most 255 bytes' });
export const metadata = z
  .string()
  .max(4096)
  .meta({ description: 'arbitrary machine-readable data (often JSON), at most 4096 bytes' });

export const deletionPolicies = ['Delete', 'Orphan'] as const;
export const deletionPolicy = z.enum(deletionPolicies).default('Delete').meta({
  description:
    'Delete (default) removes the server resource when this object is deleted; Orphan leaves it on the server',
});

/** `description`, `metadata` and `deletionPolicy`: spread first into a spec object. */
export const describedSpecFields = {
  description: description.optional(),
  metadata: metadata.optional(),
  deletionPolicy,
};

export const conditionStatuses = ['True', 'False', 'Unknown'] as const;

/** The shape of metav1.Condition, with its limits. */
export const condition = z.object({
  type: z
    .string()
    .max(316)
    .regex(
      /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/,
    )
    .meta({ description: 'condition type in CamelCase: Ready or Synced' }),
  status: z.enum(conditionStatuses),
  observedGeneration: z
    .int()
    .min(0)
    .optional()
    .meta({ description: 'the .metadata.generation the condition was set for' }),
  lastTransitionTime: z
    .string()
    .meta({ format: 'date-time', description: 'when the status last changed (kept while it does not)' }),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/)
    .meta({ description: 'why, in CamelCase, e.g. Created or ServerRejected' }),
  message: z.string().max(32768).meta({ description: 'human-readable detail' }),
});
export type Condition = z.output<typeof condition>;

/** The status fields every kind has; spread first into a status object. */
export const statusFields = {
  id: z.string().max(128).optional().meta({ description: 'id of the resource on the server' }),
  uri: z.string().max(2048).optional().meta({ description: 'API location of the resource on the server' }),
  observedGeneration: z
    .int()
    .min(0)
    .optional()
    .meta({ description: 'the .metadata.generation last reconciled' }),
  conditions: z
    .array(condition)
    .max(16)
    .optional()
    .meta({
      description: 'Ready and Synced',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
};

/**
 * Status of kinds that send Secret values to the server (which never shows them again): the
 * resourceVersion of each Secret last sent, so a changed Secret is sent again. No content.
 */
export const secretVersionsStatusField = {
  secretVersions: z
    .record(z.string(), z.string())
    .optional()
    .meta({ description: '<Secret name>/<key> -> resourceVersion of the values last sent to the server' }),
};

/** A status of nothing but the common fields. */
export const baseStatus = z.object(statusFields);
export type BaseStatus = z.output<typeof baseStatus>;
