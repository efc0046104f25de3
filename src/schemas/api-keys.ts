import { z } from 'zod';
import { description, listOf, metadata, timestamp } from './common.js';

export const apiKey = z
  .object({
    id: z.string(),
    uri: z.string(),
    created_at: timestamp,
    description: z.string(),
    metadata: z.string(),
    owner_id: z.string(),
    token: z
      .string()
      .nullable()
      .meta({ description: 'the API key itself; present only in the response to creation, null elsewhere' }),
  })
  .meta({ id: 'APIKey' });
export type ApiKey = z.infer<typeof apiKey>;

export const apiKeyCreate = z.strictObject({
  description: description.optional(),
  metadata: metadata.optional(),
  // Existence (and the `usr_`/`bot_` kind) is checked by the route, which answers with a reference error.
  owner_id: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'user or bot that owns the key; default the caller; only admins may name another' }),
});
export type ApiKeyCreate = z.input<typeof apiKeyCreate>;
export const apiKeyUpdate = z.strictObject({
  description: description.optional(),
  metadata: metadata.optional(),
});
export type ApiKeyUpdate = z.input<typeof apiKeyUpdate>;
export const apiKeyList = listOf('api_keys', apiKey);
export type ApiKeyList = z.infer<typeof apiKeyList>;
