import { z } from 'zod';
import { describedInputFields, describedResourceFields, listOf, ref } from './common.js';

/** Label names in the style of agent and Kubernetes labels: `app`, `edgeward.dev/region`, `tier_1`. */
export const TUNNEL_GROUP_LABEL_NAME = /^[A-Za-z0-9_.\-/]{1,63}$/;
export const TUNNEL_GROUP_LABEL_VALUE_MAX_BYTES = 255;
/** A selector, not a document: a bound keeps stored rows and matching small. */
export const TUNNEL_GROUP_MAX_LABELS = 64;

/** `labels`: name -> value; every tunnel session carrying all of them belongs to the group. */
export const tunnelGroupLabels = z
  .record(z.string(), z.string({ error: 'must be a string' }), {
    // Undefined keeps the generic wording, which says "is required" for a missing field.
    error: (issue) =>
      issue.input === undefined ? undefined : 'must be an object of label names to string values',
  })
  .superRefine((labels, ctx) => {
    const names = Object.keys(labels);
    if (names.length === 0) ctx.addIssue({ code: 'custom', message: 'must have at least one label' });
    if (names.length > TUNNEL_GROUP_MAX_LABELS) {
      ctx.addIssue({ code: 'custom', message: `must have at most ${TUNNEL_GROUP_MAX_LABELS} labels` });
    }
    for (const [name, value] of Object.entries(labels)) {
      if (!TUNNEL_GROUP_LABEL_NAME.test(name)) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `label name ${JSON.stringify(name)} must be 1 to 63 characters of letters, digits, '_', '.', '-' and '/'`,
        });
      } else if (Buffer.byteLength(value, 'utf8') > TUNNEL_GROUP_LABEL_VALUE_MAX_BYTES) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `value must be at most ${TUNNEL_GROUP_LABEL_VALUE_MAX_BYTES} bytes`,
        });
      }
    }
  })
  .meta({
    description: 'label name -> value that tunnel sessions must carry to belong to the group',
    minProperties: 1,
    maxProperties: TUNNEL_GROUP_MAX_LABELS,
    propertyNames: { pattern: TUNNEL_GROUP_LABEL_NAME.source },
  });
export type TunnelGroupLabels = z.infer<typeof tunnelGroupLabels>;

export const tunnelGroupBackend = z
  .object({
    ...describedResourceFields,
    labels: z.record(z.string(), z.string()),
    tunnels: z.array(ref).meta({ description: 'online tunnel sessions whose labels match' }),
  })
  .meta({ id: 'TunnelGroupBackend' });
export type TunnelGroupBackend = z.infer<typeof tunnelGroupBackend>;

export const tunnelGroupBackendCreate = z.strictObject({
  ...describedInputFields,
  labels: tunnelGroupLabels,
});
export type TunnelGroupBackendCreate = z.input<typeof tunnelGroupBackendCreate>;

/** `labels`, when sent, replaces the whole set. */
export const tunnelGroupBackendUpdate = z.strictObject({
  ...describedInputFields,
  labels: tunnelGroupLabels.optional(),
});
export type TunnelGroupBackendUpdate = z.input<typeof tunnelGroupBackendUpdate>;

export const tunnelGroupBackendList = listOf('backends', tunnelGroupBackend);
export type TunnelGroupBackendList = z.infer<typeof tunnelGroupBackendList>;
