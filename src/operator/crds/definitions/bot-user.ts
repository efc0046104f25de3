import { z } from 'zod';
import { deletionPolicy, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';

export const botUserSpec = z.object({
  name: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .meta({ description: 'human-readable name of the bot; default the name of this object' }),
  active: z.boolean().default(true).meta({ description: 'whether the bot is active; default true' }),
  deletionPolicy,
});
export type BotUserSpec = z.output<typeof botUserSpec>;

export const botUserStatus = z.object(statusFields);
export type BotUserStatus = z.output<typeof botUserStatus>;

export const botUserKind = defineKind({
  kind: 'BotUser',
  plural: 'botusers',
  shortNames: ['bot'],
  description: 'BotUser is a non-human user of the API; credentials may name it as their owner.',
  spec: botUserSpec,
  status: botUserStatus,
  printerColumns: [{ name: 'Active', type: 'boolean', jsonPath: '.spec.active' }],
});
