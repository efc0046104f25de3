/**
 * The description and metadata every server resource has, from a spec: unset clears the server's
 * (the spec is the whole truth, and the server stores '' for none).
 */
export function describedFields(spec: { description?: string | undefined; metadata?: string | undefined }) {
  return { description: spec.description ?? '', metadata: spec.metadata ?? '' };
}
