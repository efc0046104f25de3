/** Traffic policy: rules with CEL expressions, checked when written and run by the edge. */
export { compilePolicy } from './compile.js';
export { formatPolicyPath, PolicyError, PolicyEvaluationError, type PolicyPath } from './errors.js';
export type {
  CompiledPolicy,
  CompileOptions,
  ConnectionResult,
  HeaderFields,
  InboundResult,
  OutboundResult,
  PolicyConnection,
  PolicyDocument,
  PolicyLogEntry,
  PolicyPhase,
  PolicyReply,
  PolicyRequest,
  PolicyResponse,
} from './types.js';
