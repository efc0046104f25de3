export * from './cel.js';
export * from './common.js';
export * from './generate.js';
export * from './kind.js';
export * from './kinds/index.js';
export * from './modules.js';
export * from './route-modules.js';
export * from './to-openapi.js';
