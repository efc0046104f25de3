import { z } from 'zod';
import { listOf, timestamp } from './common.js';

export const botUser = z
  .object({
    id: z.string(),
    uri: z.string(),
    name: z.string(),
    active: z.boolean(),
    created_at: timestamp,
  })
  .meta({ id: 'BotUser' });
export type BotUser = z.infer<typeof botUser>;

// The spec gives no limit for a bot's name; 1..255 bytes matches `description`, the other
// human-readable text field, and keeps an empty name (useless in listings) out.
const botName = z
  .string()
  .refine((s) => s.length > 0 && Buffer.byteLength(s, 'utf8') <= 255, 'must be 1 to 255 bytes')
  .meta({ description: 'human-readable name of the bot, 1 to 255 bytes', minLength: 1 });

export const botUserCreate = z.strictObject({
  name: botName,
  active: z.boolean().optional().meta({ description: 'whether the bot is active; default true' }),
});
export type BotUserCreate = z.input<typeof botUserCreate>;
export const botUserUpdate = z.strictObject({
  name: botName.optional(),
  active: z.boolean().optional(),
});
export type BotUserUpdate = z.input<typeof botUserUpdate>;
export const botUserList = listOf('bot_users', botUser);
export type BotUserList = z.infer<typeof botUserList>;
