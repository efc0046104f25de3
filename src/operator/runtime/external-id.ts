/**
 * The server id of a CR's resource, mirrored from status.id into an annotation. Status is not
 * kept by a backup restore or a move to another cluster (Velero, `kubectl get -o yaml | apply`);
 * annotations are. A CR whose status is empty reads its resource back from here instead of
 * creating a second one, as Crossplane's external-name. The operator writes it; an update that
 * changes only this annotation enqueues nothing (it is that write coming back).
 */
export const EXTERNAL_ID_ANNOTATION = 'edgeward.dev/external-id';
