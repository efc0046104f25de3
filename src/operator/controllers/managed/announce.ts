import type { ReconcileContext } from '../../runtime/controller.js';
import type { EventReporter } from '../../runtime/events.js';
import type { ManagedObject } from './managed-resource.js';

/** A change made on the server: a Kubernetes Event on the object and a log line with the id. */
export async function announce(
  events: EventReporter,
  context: ReconcileContext,
  object: ManagedObject,
  id: string,
  reason: string,
  message: string,
  type: 'normal' | 'warning' = 'normal',
): Promise<void> {
  if (type === 'warning') context.log.warn({ id, reason }, message);
  else context.log.info({ id, reason }, message);
  await events[type](object, reason, message);
}
