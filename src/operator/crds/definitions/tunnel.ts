import { z } from 'zod';
import {
  TUNNEL_GROUP_LABEL_VALUE_MAX_BYTES,
  TUNNEL_GROUP_MAX_LABELS,
} from '../../../schemas/tunnel-group-backends.js';
import { atMostOne, exactlyOne, withRules } from '../cel.js';
import { localRef, metadata, objectName, secretKeyRef, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';

/**
 * A tunnel the operator carries itself: an agent in each operator replica's process (a session per
 * replica), binding the tunnel group of `labels` and carrying its connections to a Service of the
 * cluster (or to `url`). No server resource is created: the sessions are the server-side trace,
 * and they end with the CR, which is why Tunnel has no `deletionPolicy` (nor finalizer, nor
 * `description`).
 */

export const tunnelProtocols = ['tcp', 'http', 'tls'] as const;

/**
 * The tunnel group's labels, as the API's tunnel-group backends take them. The name pattern is a
 * CEL rule (a structural schema has no `propertyNames`); the byte limit of values is checked by the
 * controller (Kubernetes counts characters).
 */
const labels = withRules(
  z.record(z.string(), z.string().max(TUNNEL_GROUP_LABEL_VALUE_MAX_BYTES)).meta({
    description:
      "the session's labels: it binds the tunnel group of these labels (a TCPEdge's backend.labels); 1 to 64 names of letters, digits, '_', '.', '-', '/' (at most 63 characters) to values of at most 255 bytes",
    minProperties: 1,
    maxProperties: TUNNEL_GROUP_MAX_LABELS,
  }),
  {
    rule: "self.all(name, name.matches('^[A-Za-z0-9_./-]{1,63}$'))",
    message: "label names are 1 to 63 letters, digits, '_', '.', '-' or '/'",
  },
);

const serviceForward = withRules(
  z.object({
    name: objectName.meta({ description: 'name of the Service in the same namespace' }),
    port: z
      .int()
      .min(1)
      .max(65535)
      .optional()
      .meta({ description: 'the Service port, by number (spec.ports[].port)' }),
    portName: z
      .string()
      .max(63)
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .optional()
      .meta({
        description: 'the Service port, by name (spec.ports[].name); neither: the Service has one port',
      }),
  }),
  atMostOne('port', 'portName'),
);

const forward = withRules(
  z.object({
    service: serviceForward.optional().meta({
      description:
        "a Service of the namespace: connections go to a ready endpoint of its EndpointSlices (the port's target port), or to its clusterIP when it has no EndpointSlice",
    }),
    protocol: z.enum(tunnelProtocols).optional().meta({
      description:
        'with service: how the agent speaks to the endpoint, tcp (default), http or tls (the agent opens TLS to it)',
    }),
    url: z
      .string()
      .max(2048)
      .regex(/^(tcp|tls|http):\/\/[^\s/?#]+\/?$/)
      .optional()
      .meta({
        description:
          'an explicit upstream instead of a Service: tcp://host:port, tls://host[:port] or http://host[:port]',
      }),
  }),
  exactlyOne('service', 'url'),
  {
    rule: '!has(self.url) || !has(self.protocol)',
    message: 'protocol goes with service; a url says its protocol in its scheme',
    fieldPath: '.protocol',
  },
).meta({ description: 'where the agent carries connections: a Service of the namespace, or a url' });

export const tunnelSpec = withRules(
  z.object({
    labels,
    forward,
    credentialRef: localRef('TunnelCredential')
      .optional()
      .meta({ description: 'the TunnelCredential of the same namespace whose token Secret the agent uses' }),
    tokenSecretRef: secretKeyRef
      .optional()
      .meta({ description: 'a Secret key holding an authtoken, instead of credentialRef' }),
    metadata: metadata
      .optional()
      .meta({ description: 'free text shown on the tunnel session (at most 4096 characters)' }),
    edgeAddr: z
      .string()
      .max(261)
      .regex(/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$/)
      .optional()
      .meta({
        description:
          "host:port of the edge's tunnel endpoint; default the operator's --edge-addr (its --edge-ca and --edge-server-name apply either way)",
      }),
  }),
  exactlyOne('credentialRef', 'tokenSecretRef'),
);
export type TunnelSpec = z.output<typeof tunnelSpec>;

export const tunnelStatus = z.object({
  ...statusFields,
  sessionIds: z.array(z.string().max(128)).max(16).optional().meta({
    description:
      "the live tunnel sessions of this Tunnel, oldest first: one per operator replica (each runs the Tunnel's agent) and edge it holds",
  }),
  forwardTarget: z
    .string()
    .max(2048)
    .optional()
    .meta({ description: 'where carried connections go now, e.g. tcp://10.1.2.3:8080' }),
});
export type TunnelStatus = z.output<typeof tunnelStatus>;

export const tunnelKind = defineKind({
  kind: 'Tunnel',
  plural: 'tunnels',
  shortNames: ['tun'],
  description:
    "Tunnel is an agent every operator replica runs in its own process: it binds a tunnel group's labels at the edge and carries the group's connections to a Service of the cluster. status.sessionIds are the live sessions of every replica's agent, status.id the oldest of them.",
  spec: tunnelSpec,
  status: tunnelStatus,
  printerColumns: [{ name: 'Target', type: 'string', jsonPath: '.status.forwardTarget' }],
});
