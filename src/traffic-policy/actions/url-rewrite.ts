import { urlRewriteConfig } from '../action-configs.js';
import { PolicyError, PolicyEvaluationError } from '../errors.js';
import { compilePattern, replacementProblem } from '../regex.js';
import { parseAt } from '../zod-issues.js';
import { type ActionCompiler, configPath } from './step.js';

/**
 * `url-rewrite`: the request target (path, then `?query`) with the first match of `from` replaced
 * by `to` is what the upstream is asked for; later rules see the new path. A target `from` does
 * not match is left alone. A result that is not a path (no leading `/`) is reported and ignored.
 */
export const urlRewrite: ActionCompiler = (config, site) => {
  const path = configPath(site);
  const parsed = parseAt(urlRewriteConfig, config ?? {}, path);
  const compiled = compilePattern(parsed.from);
  if ('problem' in compiled)
    throw new PolicyError([...path, 'from'], compiled.problem, { cause: compiled.cause });
  const { regex } = compiled;
  const problem = replacementProblem(parsed.to, regex);
  if (problem) throw new PolicyError([...path, 'to'], problem);
  return (state, rule) => {
    const target = state.requestTarget;
    if (!regex.test(target)) return 'continue';
    const rewritten = target.replace(regex, parsed.to);
    if (!rewritten.startsWith('/') || /[\r\n\0]/.test(rewritten)) {
      state.hooks.onError(
        new PolicyEvaluationError(
          site.path,
          rule,
          `rewriting ${JSON.stringify(target)} gave ${JSON.stringify(rewritten)}, which is not a path; the request is not rewritten`,
        ),
      );
      return 'continue';
    }
    state.rewrite(rewritten);
    return 'continue';
  };
};
