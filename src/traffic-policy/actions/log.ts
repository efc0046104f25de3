import { logConfig } from '../action-configs.js';
import { parseAt } from '../zod-issues.js';
import { type ActionCompiler, configPath } from './step.js';

/** `log`: hands `metadata` and who asked for what to the `onLog` hook; evaluation goes on. */
export const log: ActionCompiler = (config, site) => {
  const { metadata } = parseAt(logConfig, config ?? {}, configPath(site));
  return (state, rule) => {
    state.hooks.onLog({
      rule,
      path: site.path,
      metadata,
      request: { method: state.request?.method ?? '', url: state.url, clientIp: state.connection.clientIp },
    });
    return 'continue';
  };
};
