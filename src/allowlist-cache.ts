/**
 * The allowlist step of a dispatch, in time that does not grow with the registry (issue 12).
 *
 * A call needs one name's verdict, not the whole intersection: `allowlistRefusal` asks each layer the
 * dispatch was given whether it holds the call's canonical form. A layer array the gate has seen before
 * is answered from an index of its canonical forms kept beside it (a `WeakMap` keyed by the array):
 *
 * - a frozen array cannot change, so its index is used as is;
 * - a plain array can change in place, so its index keeps a snapshot (a copy of its entries) and an answer
 *   is only given for what the array holds *now*: "present" when the array still holds, at the position
 *   the index recorded, the very spelling that had the call's form (one comparison); "absent" only after
 *   the whole array compared equal to the snapshot; otherwise the array changed and is indexed again. A
 *   plan downgraded by `splice` therefore refuses on the next call — never a stale allow.
 *
 * An array seen for the first time is scanned instead of indexed (a fresh array per request — a plan
 * read per request — would otherwise build and drop an index per call); it is indexed the next time it
 * is seen. Other iterables (a `Set`, a generator) are read once per call and never cached.
 *
 * `allowlistFor` builds the full resolved list where a list is needed (`schemas()`, the tools shown to a
 * model) from the same indexes, cached by their identity: an index rebuilt after a mutation is a new key.
 *
 * Look-alike (confusable) names are not checked here: that is a declaration-time check (the registry at
 * `register`, a policy file at load and lint), never a per-call cost.
 */
import {
  checkLayer,
  declaredForms,
  FROM_FORMS,
  layerForms,
  layerNameError,
  REFUSAL_OF,
  ToolAllowlist,
  type AllowlistLayer,
  type FormSet,
} from './allowlist.js';
import { jointHolds, jointSlot, type Joint, type JointSlot } from './allowlist-joint.js';
import type { RefusalLayer } from './errors.js';
import type { GateContext, GateEnvironment } from './contracts/gate.js';
import { canonical, canonicalIndex } from './names.js';

/** One layer's canonical forms, indexed once per array (frozen) or per content (plain). */
interface LayerIndex {
  /** canonical form → position in `spellings` of its first spelling */
  readonly forms: ReadonlyMap<string, number>;
  /** The frozen array itself, or a copy of a plain array's entries when it was indexed. */
  readonly spellings: readonly string[];
  readonly frozen: boolean;
}

type Role = 'declared' | 'tenant' | 'caller';

// Kept apart: a declaration is checked more strictly (names, collisions) than a tenant or caller layer,
// so an array indexed as a tenant layer must not be taken as a checked declaration.
const declaredIndexes = new WeakMap<object, LayerIndex>();
const layerIndexes = new WeakMap<object, LayerIndex>();

// Arrays seen once and not yet indexed. Short arrays sit in a small ring of strong references (a
// `WeakSet` insert per call for a fresh array per request costs more in GC than the array's scan);
// long ones in a WeakSet, where the insert is small beside the scan it comes with.
const LONG = 256;
const RING = 8;
const recent: (object | undefined)[] = new Array<object | undefined>(RING);
let ringNext = 0;
const seenLong = new WeakSet<object>();

function seenBefore(layer: readonly unknown[]): boolean {
  if (layer.length > LONG) {
    if (seenLong.has(layer)) return true;
    seenLong.add(layer);
    return false;
  }
  for (let i = 0; i < RING; i++) if (recent[i] === layer) return true;
  recent[ringNext] = layer;
  ringNext = (ringNext + 1) % RING;
  return false;
}

function declarationWhere(agent: string): string {
  return `agent ${JSON.stringify(agent)} declaration`;
}

function buildIndex(layer: readonly unknown[], role: Role, agent: string): LayerIndex {
  const frozen = Object.isFrozen(layer);
  // A plain array is copied first, so what is checked is exactly what the snapshot holds.
  const spellings = (frozen ? layer : layer.slice()) as readonly string[];
  const forms = role === 'declared' ? declaredForms(spellings, declarationWhere(agent)) : layerForms(spellings, role);
  return { forms, spellings, frozen };
}

function sameEntries(layer: readonly unknown[], snapshot: readonly string[]): boolean {
  const length = snapshot.length;
  if (layer.length !== length) return false;
  for (let i = 0; i < length; i++) if (layer[i] !== snapshot[i]) return false;
  return true;
}

/** A first look at an array: does it hold `form`? Checks every entry as indexing would. */
function scan(layer: readonly unknown[], role: Role, form: string, name: string, agent: string): boolean {
  if (role === 'declared') return canonicalIndex(layer, declarationWhere(agent)).index.has(form);
  let found = false;
  // Most layers spell the call's name as the call does: compare strings first, canonicalise only if that fails.
  // A name that is its own form is compared once an entry: two strings of one length that are not one object are
  // compared character by character (a fresh 50-name plan per call: 9,959 → 8,254 instructions a call, callgrind).
  const other = name !== form;
  for (let i = 0; i < layer.length; i++) {
    const entry = layer[i];
    if (entry === form || (other && entry === name)) found = true;
    else if (typeof entry !== 'string') throw layerNameError(role, entry);
  }
  if (found) return true;
  for (let i = 0; i < layer.length; i++) if (canonical(layer[i] as string) === form) return true;
  return false;
}

/** Does the layer hold `form` now? */
function holds(layer: unknown, role: Role, form: string, name: string, agent: string): boolean {
  if (!Array.isArray(layer)) {
    if (role === 'declared') return canonicalIndex(layer as Iterable<unknown>, declarationWhere(agent)).index.has(form);
    checkLayer(layer as object, role);
    return scan(Array.from(layer as Iterable<unknown>), role, form, name, agent);
  }
  const memo = memos[role];
  let index = memo.layer === layer ? memo.index : (role === 'declared' ? declaredIndexes : layerIndexes).get(layer);
  if (index !== undefined) {
    memo.layer = layer;
    memo.index = index;
    const at = index.forms.get(form);
    if (index.frozen) return at !== undefined;
    // The spelling that had this form still sits where it was: the array holds the form now.
    if (at !== undefined && layer[at] === index.spellings[at]) return true;
    // Absent from the index: true of the array only if the array is what was indexed.
    if (at === undefined && sameEntries(layer, index.spellings)) return false;
  } else if (!Object.isFrozen(layer) && !seenBefore(layer)) {
    return scan(layer, role, form, name, agent);
  }
  index = remember(layer, role, buildIndex(layer, role, agent));
  return index.forms.has(form);
}

// The layer each role met last and its index: a steady context (one agent, one plan) skips the WeakMap.
// Always the index the WeakMap holds for that layer (both are written together in `remember`).
const memos: Record<Role, { layer: unknown; index: LayerIndex | undefined }> = {
  declared: { layer: undefined, index: undefined },
  tenant: { layer: undefined, index: undefined },
  caller: { layer: undefined, index: undefined },
};

function remember(layer: readonly unknown[], role: Role, index: LayerIndex): LayerIndex {
  (role === 'declared' ? declaredIndexes : layerIndexes).set(layer, index);
  // A joint built from this layer's earlier index no longer answers for it.
  for (let i = joints.length - 1; i >= 0; i--) {
    const j = joints[i]!;
    if (j.declared === layer || j.tenant === layer || j.caller === layer) joints.splice(i, 1);
  }
  // A tenant's and a caller's layer share one WeakMap: a memo of the other role may hold this layer.
  for (const memo of Object.values(memos))
    if (memo.layer === layer) {
      memo.layer = undefined;
      memo.index = undefined;
    }
  memos[role].layer = layer;
  memos[role].index = index;
  return index;
}

function declarationOf(context: GateContext, env: GateEnvironment): unknown {
  const agent = context.agent;
  const tools = typeof agent === 'object' && agent !== null ? agent.tools : undefined;
  // Without a declaration the agent declares every registered tool.
  return tools ?? env.registeredNames();
}

/**
 * @internal The allowlist step for one call: the layer that refuses `form` under this dispatch's
 * context, or null when every layer given holds it. Costs the layers given, not the registry. `peeked`: the slot
 * {@link peekSlot} found under `form` itself (a slot found under another spelling of it is never handed on), or null.
 */
export function allowlistRefusal(
  context: GateContext,
  env: GateEnvironment,
  form: string,
  name: string,
  agent: string,
  peeked: JointSlot | null = null,
): RefusalLayer | null {
  answering = null;
  if (context.allowlist) return context.allowlist[REFUSAL_OF](form);
  const tenant = context.tenant?.tools;
  const caller = context.caller?.scopes;
  const declaration = declarationOf(context, env);
  // The first joint kept, when it is these layers' (a steady server's): what jointFor would find first, without its
  // call and loop. The layers' own look-ups are a function of their own, so this stays small enough to be inlined.
  const first = joints.length === 0 ? null : joints[0]!;
  let j: Joint | null;
  if (first !== null && first.declared === declaration && first.tenant === tenant && first.caller === caller) {
    sinceBuilt++;
    j = first;
  } else j = jointFor(declaration, tenant, caller);
  if (j !== null) {
    // The slot {@link peekSlot} found earlier, handed on only as `form`'s (precheck knows the call's name to be its form
    // without comparing the strings again), is this form's in this joint when it is this joint's: no second look-up.
    const slot = peeked !== null && peeked.joint === j ? peeked : j.slots.get(form);
    if (slot !== undefined && jointHolds(j, slot)) {
      hitsSinceBuilt++;
      answering = slot;
      return null;
    }
  }
  return layersRefusal(declaration, tenant, caller, j, form, name, agent);
}

/** {@link allowlistRefusal} where no joint answered: each layer's own look-up. */
function layersRefusal(
  declaration: unknown,
  tenant: AllowlistLayer | undefined,
  caller: AllowlistLayer | undefined,
  j: Joint | null,
  form: string,
  name: string,
  agent: string,
): RefusalLayer | null {
  // Every layer given is read (and checked) even when an earlier one refuses: a broken layer is reported
  // whichever call meets it first.
  const declared = holds(declaration, 'declared', form, name, agent);
  const inTenant = tenant === null || tenant === undefined || holds(tenant, 'tenant', form, name, agent);
  const inCaller = caller === null || caller === undefined || holds(caller, 'caller', form, name, agent);
  if (declaration === lastDeclared && tenant === lastTenant && caller === lastCaller) {
    if (j === null) join(declaration, tenant, caller);
  } else {
    lastDeclared = declaration;
    lastTenant = tenant;
    lastCaller = caller;
  }
  // Where more than one would refuse, the declaration is named, then the tenant: the broader, standing reason.
  return !declared ? 'not_declared' : !inTenant ? 'tenant' : !inCaller ? 'caller' : null;
}

/** The slot that answered the last {@link allowlistRefusal} (every layer holds the form), else null. */
let answering: JointSlot | null = null;

/**
 * @internal The joint slot that answered the last {@link allowlistRefusal} (every layer holds the form; null when
 * the joint did not answer): read by its caller at once, with no code run between.
 */
export function answeringSlot(): JointSlot | null {
  return answering;
}

/**
 * @internal The slot of `form` in the joint kept for this context's layers, or null: a look at the joints, counted
 * nowhere and checking nothing (whether the layers hold the form is {@link allowlistRefusal}'s, at step 4).
 */
export function peekSlot(context: GateContext, env: GateEnvironment, form: string): JointSlot | null {
  if (context.allowlist) return null;
  const tenant = context.tenant?.tools;
  const caller = context.caller?.scopes;
  const declaration = declarationOf(context, env);
  for (let i = 0; i < joints.length; i++) {
    const j = joints[i]!;
    if (j.declared === declaration && j.tenant === tenant && j.caller === caller) return j.slots.get(form) ?? null;
  }
  return null;
}

// The joints of the last few steady contexts (a server taking turns between a few tenants keeps each one's).
// Building one costs its declaration's size and saves two look-ups per call it answers, so a build has to pay:
// another is built once the joints answered four times the last build's size in calls since it, or else only
// after sixteen times that size in calls (more contexts than are kept, taking turns in bursts, cannot thrash
// the joints: they pay at most a sixteenth of a build's form per call).
const JOINTS = 4;
const joints: Joint[] = [];
let sinceBuilt = 0;
let hitsSinceBuilt = 0;
let lastBuilt = 0;
let built = 0;

/** @internal How many joints were built in this process (the tests count them). */
export function jointsBuilt(): number {
  return built;
}
let lastDeclared: unknown;
let lastTenant: unknown;
let lastCaller: unknown;

function jointFor(declaration: unknown, tenant: unknown, caller: unknown): Joint | null {
  sinceBuilt++;
  for (let i = 0; i < joints.length; i++) {
    const j = joints[i]!;
    if (j.declared === declaration && j.tenant === tenant && j.caller === caller) return j;
  }
  return null;
}

function join(declaration: unknown, tenant: unknown, caller: unknown): void {
  if (hitsSinceBuilt < lastBuilt * 4 && sinceBuilt < lastBuilt * 16) return;
  const j = jointOf(declaration, tenant, caller);
  if (j === null) return;
  sinceBuilt = 0;
  hitsSinceBuilt = 0;
  built++;
  lastBuilt = j.cost;
  joints.unshift(j);
  if (joints.length > JOINTS) joints.pop();
}

/** The layer's current index, when it is an array that has one (the memo of its role holds it). */
function indexed(layer: unknown, role: Role): LayerIndex | null | undefined {
  if (layer === null || layer === undefined) return null;
  const memo = memos[role];
  return Array.isArray(layer) && memo.layer === layer ? memo.index : undefined;
}

/** The joint of three layers just read, or null while one of them is not an indexed array. */
function jointOf(declaration: unknown, tenant: unknown, caller: unknown): Joint | null {
  const di = indexed(declaration, 'declared');
  const ti = indexed(tenant, 'tenant');
  const ci = indexed(caller, 'caller');
  if (!di || ti === undefined || ci === undefined) return null;
  const slots = new Map<string, JointSlot>();
  const plain = (layer: unknown, index: LayerIndex | null): readonly unknown[] | null =>
    index === null || index.frozen ? null : (layer as readonly unknown[]);
  const joint: Joint = {
    declared: declaration,
    tenant,
    caller,
    slots,
    cost: di.forms.size,
    d: plain(declaration, di),
    t: plain(tenant, ti),
    c: plain(caller, ci),
    env: null,
    epoch: 0,
  };
  for (const [form, pd] of di.forms) {
    const pt = ti === null ? 0 : ti.forms.get(form);
    const pc = ci === null ? 0 : ci.forms.get(form);
    if (pt === undefined || pc === undefined) continue;
    const st = ti === null ? undefined : ti.spellings[pt];
    slots.set(form, jointSlot(joint, pd, pt, pc, di.spellings[pd], st, ci === null ? undefined : ci.spellings[pc]));
  }
  return joint;
}

/** An index of the layer as it is now, and whether it is the cached one (a stable cache key). */
function currentIndex(layer: unknown, role: Role, agent: string): { index: LayerIndex; cached: boolean } {
  if (!Array.isArray(layer)) {
    // Read once (a generator cannot be read twice), checked, and not cached: an iterable has no snapshot to verify.
    let entries: readonly unknown[];
    if (role === 'declared') entries = canonicalIndex(layer as Iterable<unknown>, declarationWhere(agent)).names;
    else {
      checkLayer(layer as object, role);
      entries = Array.from(layer as Iterable<unknown>);
    }
    return { index: buildIndex(entries, role, agent), cached: false };
  }
  const indexes = role === 'declared' ? declaredIndexes : layerIndexes;
  const index = indexes.get(layer);
  if (index !== undefined && (index.frozen || sameEntries(layer, index.spellings))) return { index, cached: true };
  const fresh = buildIndex(layer, role, agent);
  // A listing costs the whole layer anyway; index now what a dispatch would index on a second look.
  if (index !== undefined || Object.isFrozen(layer) || seenBefore(layer))
    return { index: remember(layer, role, fresh), cached: true };
  return { index: fresh, cached: false };
}

const NONE = {};
const lists = new WeakMap<LayerIndex, WeakMap<object, WeakMap<object, ToolAllowlist>>>();

/**
 * @internal The resolved allowlist of a dispatch context, for where a list is needed. Cached by the
 * identity of the layers' current indexes, so a layer changed in place gets a new list.
 */
export function cachedAllowlist(context: GateContext, env: GateEnvironment, agent: string): ToolAllowlist {
  if (context.allowlist) return context.allowlist;
  const tenantLayer = context.tenant?.tools;
  const callerLayer = context.caller?.scopes;
  const d = currentIndex(declarationOf(context, env), 'declared', agent);
  const t = layerGiven(tenantLayer) ? currentIndex(tenantLayer, 'tenant', agent) : null;
  const c = layerGiven(callerLayer) ? currentIndex(callerLayer, 'caller', agent) : null;
  const build = (): ToolAllowlist =>
    ToolAllowlist[FROM_FORMS](agent, d.index.forms, d.index.spellings, formsOf(t), formsOf(c));
  if (!d.cached || (t && !t.cached) || (c && !c.cached)) return build();
  let byTenant = lists.get(d.index);
  if (!byTenant) lists.set(d.index, (byTenant = new WeakMap()));
  const tk = t ? t.index : NONE;
  let byCaller = byTenant.get(tk);
  if (!byCaller) byTenant.set(tk, (byCaller = new WeakMap()));
  const ck = c ? c.index : NONE;
  let list = byCaller.get(ck);
  // The agent's name is part of the refusal text, so a cached list is reused only for the same agent.
  if (!list || list.agent !== agent) byCaller.set(ck, (list = build()));
  return list;
}

function layerGiven(layer: AllowlistLayer): layer is Iterable<string> {
  return layer !== null && layer !== undefined;
}

function formsOf(entry: { index: LayerIndex } | null): FormSet | null {
  return entry ? entry.index.forms : null;
}
