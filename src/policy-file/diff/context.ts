/**
 * The types the diff's parts share (diff.ts builds them; settings.ts, limits.ts and items.ts read them):
 * one file as the diff reads it, and one diff under way.
 */
import type { PermissionResult } from '../../permissions/result.js';
import type { Tool } from '../../tool.js';
import type { PolicySet } from '../policy-set.js';
import type { Replayer } from './replay.js';
import type { DiffRule } from './rules.js';
import type { DiffChange, DiffUncertain } from './types.js';

/** One file as the diff reads it. */
export interface SideModel {
  readonly set: PolicySet;
  readonly rules: readonly DiffRule[];
  readonly fallback: PermissionResult;
  readonly enforced: readonly DiffRule[];
  readonly byName: ReadonlyMap<string, readonly DiffRule[]>;
  /** Rules with name globs, and rules without names (namespace, tags or nothing). */
  readonly unnamed: readonly DiffRule[];
  readonly described: ReadonlyMap<string, Tool>;
  readonly agents: ReadonlyMap<string, ReadonlySet<string>>;
  /** A tenant's plan; null: it lists no tools (states nothing). */
  readonly tenants: ReadonlyMap<string, ReadonlySet<string> | null>;
  readonly scopes: ReadonlyMap<string, ReadonlySet<string>>;
  readonly replay: Replayer;
}

/** One diff under way: both sides, what it found so far, its limits. */
export interface DiffContext {
  readonly old: SideModel;
  readonly new: SideModel;
  readonly taken: readonly string[];
  readonly changes: DiffChange[];
  readonly uncertain: DiffUncertain[];
  readonly budget: number;
  readonly deadline: number;
  searched: number;
}
