/**
 * The joint of three steady layers and its slots (src/allowlist-cache.ts builds and answers them; src/gate/slot-memo.ts
 * keeps in a slot what the fast path reads of its form's tool and policy outcome). Each slot is made by
 * {@link jointSlot}, every field in one order, so all slots share one object shape.
 */
import type { GateEnvironment } from './contracts/gate.js';
import type { PolicyEvaluation } from './permissions/policy.js';
import type { Tool } from './tool.js';

/**
 * The three layers a steady server gives every call (one agent, one plan, one caller's scopes: the same arrays
 * call after call) joined: for each canonical form all three hold, its position in each. A permitted call is
 * then one Map look-up instead of three, answered as allowlist-cache.ts's `holds` answers each layer — by the same
 * indexes (a layer indexed again drops its joints, in `remember`), a plain array only while it still holds the
 * indexed spelling at that position. Anything else (a form not in all three, a spelling moved) takes the three
 * look-ups.
 */
export interface Joint {
  readonly declared: unknown;
  readonly tenant: unknown;
  readonly caller: unknown;
  /** canonical form → where each layer holds it, with the spelling indexed there */
  readonly slots: ReadonlyMap<string, JointSlot>;
  /** What building it cost: its declaration's forms. */
  readonly cost: number;
  /** Per layer, the plain array to check; null when frozen or not given. */
  readonly d: readonly unknown[] | null;
  readonly t: readonly unknown[] | null;
  readonly c: readonly unknown[] | null;
  /**
   * The environment the slots' memos were made under (precheck.ts; only one whose look-ups are fixed for its
   * revision), and their epoch: a slot's memo holds while its epoch is the joint's and this is the call's environment.
   */
  env: GateEnvironment | null;
  epoch: number;
}

/**
 * One form's positions in the three layers and the spellings indexed there, in one object: a permitted call
 * reads the Map, this slot and one entry of each plain layer (a slot's numbers in one typed array and the
 * spellings in three more arrays were four more cache lines per call, which at 10,000 tools were most of the
 * allowlist step's time, issue 25).
 */
export interface JointSlot {
  readonly pd: number;
  readonly pt: number;
  readonly pc: number;
  readonly sd: unknown;
  readonly st: unknown;
  readonly sc: unknown;
  /** The joint it is a slot of. */
  joint: Joint;
  /**
   * src/gate/slot-memo.ts's memo for this form under `joint.env` while `epoch` is the joint's: the tool the environment
   * finds under it, and the policy's outcome for that tool whatever the arguments (null: its rules are tried per call;
   * undefined: not asked yet). One look-up per call instead of three (the registry's, the joint's, the policy's).
   */
  epoch: number;
  found: Tool | undefined;
  /**
   * `found` is a frozen tool whose `canonicalName`, a data property, is this slot's form (the name it was found under
   * spelled as its canonical name): it cannot become false for that object, so precheck does not compare the strings
   * per call (a `===` of two equal strings not known to be internalized calls V8's StringEqual, ~30 instructions).
   */
  own: boolean;
  outcome: PolicyEvaluation | null | undefined;
  /**
   * `found`'s timeout (its metadata's `timeoutMs`) when fixed for good: a frozen tool whose `metadata` is a data
   * property holding a frozen object whose `timeoutMs` is one too (defineTool's tools); null when not (read per
   * call). A fact of the `found` object, whatever the epoch: at 10,000 tools the metadata read was a cache miss.
   */
  timeoutMs: number | undefined | null;
  /**
   * The Decision's fields from `outcome` when it allows or denies (`effect` null otherwise): its result, `by`, rule
   * name and reason, so a call reads neither the outcome nor its rule (two more objects per tool, issue 25).
   */
  effect: 'allow' | 'deny' | null;
  by: 'rule' | 'fallback';
  rule: string | null;
  reason: string;
}

/** A new slot of `joint`, nothing kept yet: every slot is made here, its fields in one order (one object shape). */
export function jointSlot(
  joint: Joint,
  pd: number,
  pt: number,
  pc: number,
  sd: unknown,
  st: unknown,
  sc: unknown,
): JointSlot {
  return {
    pd,
    pt,
    pc,
    sd,
    st,
    sc,
    joint,
    epoch: -1,
    found: undefined,
    own: false,
    outcome: undefined,
    timeoutMs: null,
    effect: null,
    by: 'fallback',
    rule: null,
    reason: '',
  };
}

/** Whether each plain layer of the joint still holds, where it was indexed, the spelling the slot recorded. */
export function jointHolds(j: Joint, slot: JointSlot): boolean {
  const d = j.d;
  const t = j.t;
  const c = j.c;
  return (
    (d === null || d[slot.pd] === slot.sd) &&
    (t === null || t[slot.pt] === slot.st) &&
    (c === null || c[slot.pc] === slot.sc)
  );
}
