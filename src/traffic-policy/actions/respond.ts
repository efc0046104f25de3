import { connectionDenyConfig, customResponseConfig, denyConfig } from '../action-configs.js';
import { parseAt } from '../zod-issues.js';
import { type ActionCompiler, configPath } from './step.js';

/** `deny`: an empty reply with the status (403 by default); terminal. */
export const deny: ActionCompiler = (config, site) => {
  const { status_code } = parseAt(denyConfig, config ?? {}, configPath(site));
  return (state) => {
    state.respond = { status: status_code, headers: {}, body: '' };
    return 'stop';
  };
};

/** `deny` on a TCP or TLS edge: the connection is closed; terminal. */
export const denyConnection: ActionCompiler = (config, site) => {
  parseAt(connectionDenyConfig, config ?? {}, configPath(site));
  return (state) => {
    state.denied = true;
    return 'stop';
  };
};

/** `custom-response`: the given status, body and headers; terminal. */
export const customResponse: ActionCompiler = (config, site) => {
  const parsed = parseAt(customResponseConfig, config ?? {}, configPath(site));
  const headers = Object.fromEntries(
    Object.entries(parsed.headers).map(([name, value]) => [name.toLowerCase(), value]),
  );
  return (state) => {
    state.respond = { status: parsed.status_code, headers: { ...headers }, body: parsed.body };
    return 'stop';
  };
};
