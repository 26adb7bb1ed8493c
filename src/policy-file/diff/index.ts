/**
 * The policy diff (`diffPolicies`, `toolgate diff`): what two policy files decide differently, exactly
 * where the conditions allow (intervals, finite sets, glob and prefix automata, canonical names), "may
 * change" where they do not. The only file others import.
 */
export { diffPolicies } from './diff.js';
export { diffText, diffMarkdown, KIND as DIFF_CHANGE_KIND } from './render.js';
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
} from './types.js';
