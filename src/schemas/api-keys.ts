import { z } from 'zod';
import { describedInputFields, describedResourceFields, listOf } from './common.js';

export const apiKey = z
  .object({
    ...describedResourceFields,
    owner_id: z.string(),
    token: z
      .string()
      .nullable()
      .meta({ description: 'the API key itself; present only in the response to creation, null elsewhere' }),
  })
  .meta({ id: 'APIKey' });
export type ApiKey = z.infer<typeof apiKey>;

export const apiKeyCreate = z.strictObject({
  ...describedInputFields,
  // Existence (and the `usr_`/`bot_` kind) is checked by the route, which answers with a reference error.
  owner_id: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'user or bot that owns the key; default the caller; only admins may name another' }),
});
export type ApiKeyCreate = z.input<typeof apiKeyCreate>;
export const apiKeyUpdate = z.strictObject(describedInputFields);
export type ApiKeyUpdate = z.input<typeof apiKeyUpdate>;
export const apiKeyList = listOf('api_keys', apiKey);
export type ApiKeyList = z.infer<typeof apiKeyList>;
