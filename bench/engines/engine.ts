import type { Because, BenchCall, Effect, Scenario } from '../scenario.js';

/** The names of the engines compared, in the order they are reported. */
export const ENGINE_NAMES = ['toolgate', 'naive', 'casbin', 'cedar'] as const;
export type EngineName = (typeof ENGINE_NAMES)[number];

/** One engine's verdict on a call, with the ids it gives as the reason. */
export interface Verdict {
  readonly effect: Effect;
  /** First-match engines give one id; Cedar gives the set of policies that determined its answer (empty for its default deny). */
  readonly because: readonly Because[];
}

/** An authorization engine loaded with one scenario. */
export interface Engine {
  readonly name: EngineName;
  /** `first-match`: `because` is exactly the deciding rule or layer; `determining-set`: it must contain it. */
  readonly explains: 'first-match' | 'determining-set';
  /** The decision on one call, with its explanation (used for the agreement check, not timed). */
  explain(call: BenchCall): Verdict;
  /**
   * Decides `count` calls from `calls[from]` on (the index wraps; `calls.length` is a power of two) and
   * returns how many were allowed. The loop lives in each engine so no call site is shared between them.
   */
  run(calls: readonly BenchCall[], from: number, count: number): number;
}

export type EngineFactory = (scenario: Scenario) => Engine | Promise<Engine>;
