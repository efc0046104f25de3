import { addHeadersConfig, removeHeadersConfig } from '../action-configs.js';
import { parseAt } from '../zod-issues.js';
import { type ActionCompiler, configPath } from './step.js';

/** `add-headers`: set on the request sent upstream (inbound) or the response sent back (outbound). */
export const addHeaders: ActionCompiler = (config, site) => {
  const { headers } = parseAt(addHeadersConfig, config ?? {}, configPath(site));
  const entries = Object.entries(headers);
  return (state) => {
    for (const [name, value] of entries) state.setHeader(name, value);
    return 'continue';
  };
};

/** `remove-headers`: removed from the request sent upstream or the response sent back. */
export const removeHeaders: ActionCompiler = (config, site) => {
  const { headers } = parseAt(removeHeadersConfig, config ?? {}, configPath(site));
  return (state) => {
    for (const name of headers) state.removeHeader(name);
    return 'continue';
  };
};
