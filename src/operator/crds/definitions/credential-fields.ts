import { z } from 'zod';
import { ACL_MAX_RULES, ACL_RULE_MAX_BYTES } from '../../../schemas/acl.js';
import { atMostOne, immutable } from '../cel.js';
import { localRef } from '../common.js';

/** What tunnel and SSH credentials share: ACL rules and an owner fixed at creation. */

const OWNER_IS_FIXED = 'the server sets the owner at creation';

export const acl = z
  .array(
    z
      .string()
      .max(ACL_RULE_MAX_BYTES)
      .regex(/^(\*|bind:\S+)$/),
  )
  .max(ACL_MAX_RULES)
  .optional()
  .meta({
    description:
      "ACL rules: '*' or 'bind:<domain|*.domain|host:port|key=value>'; empty or absent means no restrictions",
  });

export const ownerFields = {
  ownerRef: localRef('BotUser')
    .optional()
    .meta({ description: 'the BotUser in the same namespace that owns the credential; immutable' }),
  ownerId: z
    .string()
    .max(128)
    .regex(/^(usr|bot)_[0-9A-Za-z]{1,64}$/)
    .optional()
    .meta({
      description:
        'server id of the owning user or bot (usr_... or bot_...); default the operator; immutable',
    }),
};

export const ownerRules = [
  atMostOne('ownerRef', 'ownerId'),
  immutable('ownerRef', OWNER_IS_FIXED),
  immutable('ownerId', OWNER_IS_FIXED),
];
