export * from './cel.js';
export * from './common.js';
export * from './crd-definition.js';
export * from './definitions/index.js';
export * from './generate.js';
export * from './modules.js';
export * from './route-modules.js';
export * from './to-openapi.js';
