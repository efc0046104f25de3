import { z } from 'zod';
import { listOf, ref, timestamp } from './common.js';

export const tunnelSession = z
  .object({
    id: z.string(),
    uri: z.string(),
    agent_version: z.string(),
    /** The tunnel credential (`cr_`) or SSH credential (`sshcr_`) the agent used. */
    credential: ref,
    ip: z.string(),
    metadata: z
      .string()
      .optional()
      .meta({ description: 'the agent configuration file `metadata`; absent when unset' }),
    os: z.string(),
    region: z.string(),
    started_at: timestamp,
    transport: z.string().meta({ description: 'agent protocol (`svc/2`) or `ssh`' }),
  })
  .meta({ id: 'TunnelSession' });
export type TunnelSession = z.infer<typeof tunnelSession>;

export const tunnelSessionList = listOf('tunnel_sessions', tunnelSession);
export type TunnelSessionList = z.infer<typeof tunnelSessionList>;
