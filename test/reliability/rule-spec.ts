import type { PermissionResult } from '../../src/index.js';

/** How a generated rule's `match` behaves: absent, constant, a threshold test, throwing, or answering garbage. */
export type MatchKind = 'none' | 'true' | 'false' | 'gt' | 'throws' | 'garbage';

/** A generated rule, before it is turned into a PermissionRule (shared by the property and execution tests). */
export interface RuleSpec {
  readonly tools: readonly string[] | undefined;
  readonly tags: readonly string[] | undefined;
  readonly match: MatchKind;
  readonly threshold: number;
  readonly result: PermissionResult;
}
