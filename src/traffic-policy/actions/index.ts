import { PolicyError } from '../errors.js';
import type { Stage } from '../variables.js';
import { addHeaders, removeHeaders } from './headers.js';
import { log } from './log.js';
import { rateLimit } from './rate-limit.js';
import { redirect } from './redirect.js';
import { customResponse, deny, denyConnection } from './respond.js';
import type { ActionCompiler, ActionSite, ActionStep } from './step.js';
import { urlRewrite } from './url-rewrite.js';

/** The actions each stage supports, in the order messages list them. */
const ACTIONS: Record<Stage, Record<string, ActionCompiler>> = {
  inbound: {
    deny,
    'custom-response': customResponse,
    redirect,
    'rate-limit': rateLimit,
    'add-headers': addHeaders,
    'remove-headers': removeHeaders,
    'url-rewrite': urlRewrite,
    log,
  },
  outbound: {
    deny,
    'custom-response': customResponse,
    'add-headers': addHeaders,
    'remove-headers': removeHeaders,
  },
  connection: { deny: denyConnection },
};

const WHERE: Record<Stage, string> = {
  inbound: 'on inbound rules',
  outbound: 'on outbound rules',
  connection: "on a TCP or TLS edge's rules, which act on connections",
};

export function supportedActions(stage: Stage): string[] {
  return Object.keys(ACTIONS[stage]);
}

/** The compiled action at `site`, or a PolicyError naming `type` or a field of `config`. */
export function compileAction(action: { type: string; config?: unknown }, site: ActionSite): ActionStep {
  const compiler = Object.hasOwn(ACTIONS[site.stage], action.type)
    ? ACTIONS[site.stage][action.type]
    : undefined;
  if (!compiler) {
    const known = Object.values(ACTIONS).some((actions) => Object.hasOwn(actions, action.type));
    const what = known ? `'${action.type}' is not supported` : `unsupported action type '${action.type}'`;
    throw new PolicyError(
      [...site.path, 'type'],
      `${what} ${WHERE[site.stage]}; supported: ${supportedActions(site.stage).join(', ')}`,
    );
  }
  return compiler(action.config, site);
}
