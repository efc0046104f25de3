import { redirectConfig } from '../action-configs.js';
import { PolicyError } from '../errors.js';
import { compilePattern, replacementProblem } from '../regex.js';
import { parseAt } from '../zod-issues.js';
import { type ActionCompiler, configPath } from './step.js';

/**
 * `redirect`: answers with `Location`. With `from`, only a URL it matches is redirected, and the
 * location is the URL with that match replaced by `to` (`$1` refers to `from`'s groups); a URL it
 * does not match lets evaluation go on. Without `from`, the location is `to` as written.
 */
export const redirect: ActionCompiler = (config, site) => {
  const path = configPath(site);
  const parsed = parseAt(redirectConfig, config ?? {}, path);
  let regex: RegExp | undefined;
  if (parsed.from !== undefined) {
    const compiled = compilePattern(parsed.from);
    if ('problem' in compiled)
      throw new PolicyError([...path, 'from'], compiled.problem, { cause: compiled.cause });
    regex = compiled.regex;
  }
  const problem = replacementProblem(parsed.to, regex);
  if (problem) throw new PolicyError([...path, 'to'], problem);
  return (state) => {
    let location = parsed.to;
    if (regex) {
      const url = state.url;
      if (!regex.test(url)) return 'continue';
      location = url.replace(regex, parsed.to);
    }
    state.respond = { status: parsed.status_code, headers: { location }, body: '' };
    return 'stop';
  };
};
