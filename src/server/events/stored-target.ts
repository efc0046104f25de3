import type { SecretBox } from '../../crypto/secret-box.js';
import type { EventTargetInput } from '../../schemas/event-destinations.js';
import { type StoredEventTarget, storedEventTarget } from '../../schemas/event-target-forms.js';

/** The seal's context binds the ciphertext to its row: a target copied to another row will not open. */
const sealContext = (destinationId: string) => `event_destination:${destinationId}`;

export function sealTarget(secretBox: SecretBox, destinationId: string, target: EventTargetInput): string {
  return secretBox.seal(JSON.stringify(storedEventTarget(target)), sealContext(destinationId));
}

export function openTarget(secretBox: SecretBox, destinationId: string, sealed: string): StoredEventTarget {
  let text: string;
  try {
    text = secretBox.open(sealed, sealContext(destinationId));
  } catch (cause) {
    throw new Error(`target of event destination ${destinationId} cannot be unsealed (wrong secret key?)`, {
      cause,
    });
  }
  // Written by storedEventTarget() and authenticated by AES-GCM, so its shape is ours.
  return JSON.parse(text) as StoredEventTarget;
}
