import { EdgewardApiError } from '../../../client/errors.js';

/** 404 from the edgeward API (Kubernetes' is `isKubeNotFound`, in runtime/kube-errors.ts). */
export const isEdgewardNotFound = (error: unknown) => error instanceof EdgewardApiError && error.isNotFound;
