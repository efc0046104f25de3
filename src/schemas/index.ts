// Every schema of the management API: what the server validates with, what the client is typed by.
export * from './acl.js';
export * from './api-keys.js';
export * from './bot-users.js';
export * from './common.js';
export * from './credentials.js';
export * from './event-destinations.js';
export * from './event-subscriptions.js';
export * from './ip-policies.js';
export * from './reserved-addrs.js';
export * from './ssh-credentials.js';
export * from './tunnel-sessions.js';
