/**
 * `toolgate/policy`: policy files (YAML or JSON, described by `toolgate/policy.schema.json`), compiled
 * to the core's PermissionPolicy, with lint, explain and watch. This file is the subpath's public
 * surface; the root entry `toolgate` imports none of it (so it never loads yaml or picomatch). `diffPolicies`
 * (diff/) is the semantic difference of two files: what `toolgate diff` prints.
 */
export { parsePolicy, loadPolicyFile, readPolicyFile, policySchema, formatIssue, PolicyFileError } from './load.js';
export type { ParsePolicyOptions, PolicyParseResult } from './load.js';
export { PolicySet } from './policy-set.js';
export type { PolicyRuleInfo, PolicyAgent, PolicyTenantLimits, PolicyContextInput } from './policy-set.js';
export type {
  PolicyFileData,
  PolicyToolData,
  PolicyAgentData,
  PolicyTenantData,
  PolicyRuleData,
  PolicyConditionData,
  PolicyLimitData,
  PolicyIssue,
  PolicyPosition,
} from './types.js';
export { explainCall, previewDecision } from './explain.js';
export type { Explanation, LayerExplanation, RuleExplanation, ExplainedDecision } from './explain.js';
export { lintPolicy, lintPolicyFile, lintPolicyText, LINT_CODES } from './lint.js';
export type { LintFinding, LintReport } from './lint.js';
export { watchPolicyFile } from './watch.js';
export type { WatchPolicyOptions, PolicyWatch } from './watch.js';
export { resolvePath } from './paths.js';
export type { ResolvedPath } from './paths.js';
export type { ConditionTrace } from './matchers.js';
export { confusableFindings } from './confusable.js';
export { skeleton, findConfusables, CONFUSABLES_VERSION } from '../unicode/confusables.js';
export type { ConfusableFinding } from './confusable.js';
export { normalResourceUri } from './uri.js';
export type { NormalUri } from './uri.js';
export { diffPolicies, diffText, diffMarkdown } from './diff/index.js';
export type {
  PolicyDiff,
  DiffChange,
  DiffUncertain,
  DiffSetting,
  DiffVerdict,
  DiffExample,
  DiffWho,
  DiffWhoSet,
  DiffKind,
  DiffDirection,
  DiffLimit,
  DiffOptions,
} from './diff/index.js';
