/**
 * What a joint slot (src/allowlist-joint.ts) keeps for its form, for precheck.ts and execute.ts (issue 25): the tool
 * the registry's environment finds under it, that tool's timeout where it is fixed for good, and the policy's outcome
 * for it whatever the arguments, with the fields a Decision takes from it. At 10,000 tools each object a call reads
 * beside its slot (the tool's metadata, the outcome, its rule) was a cache miss; each kept thing is exactly what the
 * call would read.
 */
import { answeringSlot } from '../allowlist-cache.js';
import type { JointSlot } from '../allowlist-joint.js';
import type { GateEnvironment } from '../contracts/gate.js';
import { FIXED_OUTCOME, PermissionPolicy, type PolicyEvaluation } from '../permissions/policy.js';
import type { Tool } from '../tool.js';
import { fallbackText } from './decisions.js';

/**
 * `env.lookup(name)`, kept in the name's joint slot while the environment's look-ups are fixed (the registry's
 * current one: a registry changed since has another environment, and the slot's epoch moves on to it).
 */
export function toolIn(slot: JointSlot, env: GateEnvironment, name: string): Tool | undefined {
  if (env.fixedLookup !== true) return env.lookup(name);
  const joint = slot.joint;
  if (joint.env === env && slot.epoch === joint.epoch) return slot.found;
  const tool = env.lookup(name);
  if (joint.env !== env) {
    joint.env = env;
    joint.epoch++;
  }
  slot.epoch = joint.epoch;
  slot.found = tool;
  slot.own = tool !== undefined && ownFormOf(tool, name);
  slot.timeoutMs = fixedTimeout(tool);
  slot.outcome = undefined;
  slot.effect = null;
  return tool;
}

/**
 * Whether `tool` is found under `name` spelled as its canonical name, for good: frozen, its `canonicalName` a data
 * property equal to `name` (defineTool's tools are; a tool of the caller's making with a getter, or not frozen, is
 * compared on every call, as before).
 */
function ownFormOf(tool: Tool, name: string): boolean {
  if (!Object.isFrozen(tool)) return false;
  const own = Object.getOwnPropertyDescriptor(tool, 'canonicalName');
  return own !== undefined && 'value' in own && own.value === name;
}

/** The value of `object`'s own data property `key`, or `NOT_FIXED` when it has none (a getter, inherited, absent). */
function dataOf(object: object, key: string): unknown {
  const own = Object.getOwnPropertyDescriptor(object, key);
  return own !== undefined && 'value' in own ? own.value : NOT_FIXED;
}
const NOT_FIXED = Symbol('not fixed');

/**
 * `tool`'s timeout when it cannot change for that object: a frozen tool whose `metadata` is an own data property
 * holding a frozen object whose `timeoutMs` is one too (defineTool's tools); null for any other (a getter, metadata of
 * the caller's making that is not frozen): read per call, as before.
 */
function fixedTimeout(tool: Tool | undefined): number | undefined | null {
  if (tool === undefined || !Object.isFrozen(tool)) return null;
  const metadata = dataOf(tool, 'metadata');
  if (typeof metadata !== 'object' || metadata === null || !Object.isFrozen(metadata)) return null;
  const timeoutMs = dataOf(metadata, 'timeoutMs');
  return timeoutMs === NOT_FIXED ? null : (timeoutMs as number | undefined);
}

/**
 * `tool`'s timeout as its slot keeps it (the slot found that very tool, whose timeout is fixed: a number, or undefined
 * for none), or null: the tool's metadata is read per call. A fact of the tool object, it holds whatever the slot's
 * epoch. The value, not the slot: the slot may be taken for another tool before the deadline is set (the tool's own
 * `execute` or its schema calling another registry's tool of the same form; atkslot).
 */
export function keptTimeout(slot: JointSlot | null, tool: Tool): number | undefined | null {
  return slot !== null && slot.found === tool ? slot.timeoutMs : null;
}

/**
 * PermissionPolicy's own `evaluate`, which the kept outcome stands for: a subclass's (a kill switch refusing more)
 * or one wrapped on the prototype since is asked on every call, as before the memo (it was skipped, and ran a call
 * it refused).
 */
const OWN_EVALUATE = Object.getOwnPropertyDescriptor(PermissionPolicy.prototype, 'evaluate')!.value as unknown;

/**
 * Step 5's kept outcome: the joint slot that answered step 4 when its memo holds for this call (the slot's tool and
 * environment are this call's, the policy's `evaluate` its own), its outcome asked of the policy on its first call;
 * else null (the policy evaluates the call). Its `effect`, when not null, and the fields beside it are the Decision's.
 */
export function outcomeSlot(policy: PermissionPolicy, tool: Tool, env: GateEnvironment): JointSlot | null {
  const slot = answeringSlot();
  if (
    slot === null ||
    slot.found !== tool ||
    slot.epoch !== slot.joint.epoch ||
    slot.joint.env !== env ||
    policy.evaluate !== OWN_EVALUATE
  )
    return null;
  if (slot.outcome === undefined) {
    const epoch = slot.epoch;
    const outcome = policy[FIXED_OUTCOME](tool);
    // A rule's `select` is the caller's code: a call it made may have taken this slot for another tool or epoch
    // meanwhile (another registry under the same layer arrays; atkslot). Then nothing is kept: evaluated afresh.
    if (slot.found !== tool || slot.epoch !== epoch || slot.joint.epoch !== epoch || slot.joint.env !== env)
      return null;
    keepOutcome(slot, outcome);
  }
  return slot;
}

/** The outcome kept, and what a Decision reads of it when it allows or denies (an ask is resolved from the outcome). */
function keepOutcome(slot: JointSlot, outcome: PolicyEvaluation | null): void {
  slot.outcome = outcome;
  if (outcome === null || outcome.result === 'ask' || outcome.by === 'rule_error') return;
  slot.rule = outcome.rule?.name ?? null;
  slot.reason = outcome.rule ? outcome.rule.reason : fallbackText(outcome.result);
  slot.by = outcome.by;
  slot.effect = outcome.result;
}
