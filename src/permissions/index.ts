export { PermissionResult, isPermissionResult } from './result.js';
export type { PermissionRule, CompiledRule } from './rule.js';
export { PermissionPolicy } from './policy.js';
export type { PermissionPolicyOptions, PolicyEvaluation, RuleTrace } from './policy.js';
export type { PermissionHandler, PermissionRequest, HandlerAnswer } from './handler.js';
export { ALLOW_READONLY, ASK_DESTRUCTIVE, DENY_PRIVILEGED, ASK_NETWORK, ASK_FILE_SYSTEM } from './builtin-rules.js';
