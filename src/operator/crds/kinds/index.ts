/** Each kind's CRD definition; the list of kinds is the operator's registry (src/operator/kinds.ts). */
export * from './agent-ingress.js';
export * from './bot-user.js';
export * from './certificate-authority.js';
export * from './event-destination.js';
export * from './event-subscription.js';
export * from './https-edge.js';
export * from './https-edge-route.js';
export * from './ip-policy.js';
export * from './reserved-address.js';
export * from './ssh-certificate-authority.js';
export * from './ssh-credential.js';
export * from './ssh-host-certificate.js';
export * from './ssh-user-certificate.js';
export * from './tcp-edge.js';
export * from './tls-certificate.js';
export * from './tls-edge.js';
export * from './tunnel-credential.js';
