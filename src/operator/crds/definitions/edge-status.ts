import { z } from 'zod';
import { statusFields } from '../common.js';

/** Status of TLS, HTTPS and TCP edges: what the server serves, and the backend the operator keeps. */
export const edgeStatus = z.object({
  ...statusFields,
  hostports: z
    .array(z.string())
    .optional()
    .meta({ description: 'host:port pairs the server serves for the edge' }),
  backendId: z
    .string()
    .optional()
    .meta({ description: 'id of the tunnel-group backend the operator keeps for backend.labels' }),
});
export type EdgeStatus = z.output<typeof edgeStatus>;

export const hostportsColumn = { name: 'Hostports', type: 'string', jsonPath: '.status.hostports' } as const;
