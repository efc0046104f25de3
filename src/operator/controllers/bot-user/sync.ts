import type { EdgewardClient } from '../../../client/index.js';
import type { BotUser } from '../../../schemas/bot-users.js';
import type { BotUserSpec, BotUserStatus } from '../../crds/definitions/bot-user.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { changedFields } from '../shared/changed-fields.js';

export type BotUserObject = ManagedObject & { spec: BotUserSpec; status?: BotUserStatus };

/** What the server should hold: the name defaults to the object's name. */
export function desiredBotUser(object: BotUserObject): { name: string; active: boolean } {
  return { name: object.spec.name ?? object.metadata?.name ?? '', active: object.spec.active ?? true };
}

export function botUserSync(api: EdgewardClient): ResourceSync<BotUserObject, undefined, BotUser> {
  return {
    resolve: async () => ({ ready: true, value: undefined }),
    get: (id) => api.botUsers.get(id),
    create: (object, _resolved, options) => api.botUsers.create(desiredBotUser(object), options),
    async update(object, _resolved, remote) {
      const patch = changedFields(desiredBotUser(object), remote);
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.botUsers.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.botUsers.delete(id),
  };
}
