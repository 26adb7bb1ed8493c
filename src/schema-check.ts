/**
 * What one JSON Schema check keeps for its whole run: `uniqueItems`' structural ids (src/schema-bounds.ts), `enum`'s
 * and `const`'s ids by table and the value's measures (src/schema-enum.ts). Each is made by the first keyword that
 * needs it and read by every later one of the same check, so that a recursive schema applying a keyword at every
 * level of a value reads each part once for the check (1,000 levels over 50,000 numbers under `uniqueItems`: 15.7 s
 * when each level walked its subtree again). A check of a value changed since an earlier one reads it anew.
 *
 * A synchronous check runs alone, from start to end: its state is one slot, the check's root value beside it, emptied
 * when it ends (src/schema.ts; a process-wide memo left until the next check held ~34 MB of 2.6 MB of arguments) and
 * made afresh when the next starts. Starting and ending a check costs no look-up: three WeakMap deletes, one per memo
 * keyed by the root value, cost ~12 ns of a ~10 ns check (issue 25). An `$async` check awaits at each `$ref` to an
 * `$async` schema, and other checks run meanwhile: its state is kept by its root value (a WeakMap) while it runs, so a
 * check starting meanwhile does not drop it (depth × payload again: atk-uq3-async-interleave). Its count of steps is
 * its own too, beside this state (src/schema-bounds.ts `newAsyncCheck`: each check's start set a shared one to zero).
 */

/** The parts and levels of an array or object that is plain data (as a member's: a scalar one part, no level). */
export interface Measure {
  readonly size: number;
  readonly depth: number;
}

/** The state of one check (see the module's comment). */
export interface CheckState {
  /** `uniqueItems`' structural ids: each text interned once, each array's and object's id (or none). */
  ids?: { readonly ids: Map<string, number>; readonly of: WeakMap<object, number | null> };
  /** The ids of the value's parts found in each `enum` or `const` table (keyed by the table). */
  lookups?: WeakMap<object, WeakMap<object, number>>;
  /** The measure of each of the value's arrays and objects (null: not plain data). */
  measures?: WeakMap<object, Measure | null>;
}

/** No synchronous check is running. */
const IDLE: unique symbol = Symbol('no check');

/**
 * The root value of the synchronous check running now, and its state (none until a keyword keeps some). An object's
 * fields: a module's `let`s cost ~1.5 ns more a check (V8's context slots).
 */
const running: { root: unknown; state: CheckState | undefined } = { root: IDLE, state: undefined };

/** The state of each `$async` check by its root value, while it runs. */
const awaiting = new WeakMap<object, CheckState>();

/** Starts a synchronous check of `root`: nothing kept from before. */
export function startCheck(root: unknown): void {
  running.root = root;
  running.state = undefined;
}

/** Ends the synchronous check running now: its state goes (nothing of its value held). */
export function endCheck(): void {
  running.root = IDLE;
  running.state = undefined;
}

/**
 * Starts an `$async` check of `root`: a state of its own, kept by `root` until {@link endAsyncCheck} (a root that is
 * not an object: none kept, each keyword's call its own).
 */
export function startAsyncCheck(root: unknown): CheckState | undefined {
  endCheck();
  if (typeof root !== 'object' || root === null) return undefined;
  const state: CheckState = {};
  awaiting.set(root, state);
  return state;
}

/** Ends the `$async` check of `root` that {@link startAsyncCheck} gave `state` (a later check of `root` keeps its own). */
export function endAsyncCheck(root: unknown, state: CheckState | undefined): void {
  if (state !== undefined && awaiting.get(root as object) === state) awaiting.delete(root as object);
}

/**
 * The state of the check of `root` running now: the synchronous check's, an `$async` check's, or else (a check not
 * started through this module: a meta-schema's at compile time, another synchronous check's that ran inside a
 * keyword's call) one made now and kept until the next check starts.
 */
export function stateOf(root: unknown): CheckState {
  if (root === running.root) return (running.state ??= {});
  if (typeof root === 'object' && root !== null) {
    const state = awaiting.get(root);
    if (state !== undefined) return state;
  }
  running.root = root;
  return (running.state = {});
}
