/**
 * The "Tool allowlists" spec: three layers (agent, tenant, caller) intersected once, at the boundary.
 */
import { ConfigurationError, ToolNotPermittedError, type RefusalLayer } from './errors.js';
import { canonical, canonicalIndex, declaredName, describe } from './names.js';
import { confusablesMode, findConfusables, reportConfusables, type ConfusablesMode } from './unicode/confusables.js';

/** One layer's statement: `null`/`undefined` states nothing (narrows nothing); an empty set refuses everything. */
export type AllowlistLayer = Iterable<string> | null | undefined;

/** Options of {@link ToolAllowlist.resolve}. */
export interface ToolAllowlistOptions {
  /** What the tenant's plan entitles them to. @default undefined (states nothing) */
  readonly tenant?: AllowlistLayer;
  /** What the caller's scopes cover, as tool names. @default undefined (states nothing) */
  readonly caller?: AllowlistLayer;
  /** The agent's name, used in refusals. @default 'agent' */
  readonly agent?: string;
  /**
   * Two declared names that look alike (Unicode confusables, e.g. Latin "a" and Cyrillic "а") but are
   * different permissions: `'error'` throws a ConfigurationError, `'warn'` emits a process warning once
   * per pair, `'off'` skips the check. A declaration-time check (the registry runs it at `register`, a
   * policy file at load and lint), so resolution skips it unless asked. @default 'off'
   */
  readonly confusables?: ConfusablesMode;
}

/** The verdict on one name: permitted, or refused with the layer that refused it. */
export type ToolDecision =
  | { readonly tool: string; readonly permitted: true; readonly reason: null }
  | { readonly tool: string; readonly permitted: false; readonly reason: RefusalLayer };

/** @internal Read by the gate, which has the canonical form already. */
export const REFUSAL_OF = Symbol('toolgate.allowlist.refusalOf');

/** @internal Builds an allowlist from layers already indexed by canonical form (src/allowlist-cache.ts). */
export const FROM_FORMS = Symbol('toolgate.allowlist.fromForms');

/** @internal A layer's canonical forms, as the gate's cache holds them. */
export interface FormSet {
  has(form: string): boolean;
}

/**
 * The effective tool permission of one dispatch: the agent's declaration narrowed by the tenant and
 * caller layers. Immutable; resolve a new one when a layer changes.
 *
 * @example
 * const allowlist = ToolAllowlist.resolve(['search', 'refund'], { tenant: ['search'], caller: null, agent: 'concierge' });
 * allowlist.names            // ['search']
 * allowlist.decide('refund') // { tool: 'refund', permitted: false, reason: 'tenant' }
 * allowlist.check('refund')  // throws ToolNotPermittedError
 */
export class ToolAllowlist {
  readonly agent: string;
  /** The permitted names, in declared spelling and declaration order; frozen. */
  readonly names: readonly string[];
  /** canonical form → position of its declared spelling in #spellings, for every declared name */
  readonly #forms: ReadonlyMap<string, number>;
  readonly #spellings: readonly string[];
  /** by position: the verdict on that name (PERMITTED, TENANT or CALLER); 0 at a position that is no form's first */
  readonly #verdicts: Uint8Array;

  private constructor(
    agent: string,
    forms: ReadonlyMap<string, number>,
    spellings: readonly string[],
    verdicts: Uint8Array,
  ) {
    this.agent = agent;
    this.#forms = forms;
    this.#spellings = spellings;
    this.#verdicts = verdicts;
    this.names = Object.freeze(permittedNames(verdicts, spellings));
    Object.freeze(this);
  }

  /**
   * Intersects the agent's declaration with the tenant and caller layers. Two declared names with one
   * canonical form, or a declared name that is empty or holds invisible characters, is a ConfigurationError.
   */
  static resolve(declared: Iterable<string>, options: ToolAllowlistOptions = {}): ToolAllowlist {
    const agent = agentName(options.agent);
    const where = `agent ${JSON.stringify(agent)} declaration`;
    const spellings = declaredEntries(declared, where);
    const forms = declaredForms(spellings, where);
    checkConfusables(forms, spellings, options.confusables, where);
    // Each layer marks the declared positions it holds: one look-up per entry, no set of its own.
    const tenant = layerMarks(options.tenant, 'tenant', forms, spellings);
    const caller = layerMarks(options.caller, 'caller', forms, spellings);
    const verdicts = layerVerdicts(forms, spellings.length, tenant, caller);
    return unnamedUnless(options.agent, new ToolAllowlist(agent, forms, spellings, verdicts));
  }

  /**
   * @internal The intersection of a checked declaration (canonical form → position in `spellings`, which
   * must not change afterwards) with two layers' canonical forms.
   */
  static [FROM_FORMS](
    agent: string,
    forms: ReadonlyMap<string, number>,
    spellings: readonly string[],
    tenant: FormSet | null,
    caller: FormSet | null,
  ): ToolAllowlist {
    const verdicts = new Uint8Array(spellings.length);
    for (const [form, at] of forms)
      verdicts[at] = tenant && !tenant.has(form) ? TENANT : caller && !caller.has(form) ? CALLER : PERMITTED;
    return new ToolAllowlist(agent, forms, spellings, verdicts);
  }

  /** True when `name` (any spelling with the same canonical form) is permitted. */
  permits(name: string): boolean {
    return this[REFUSAL_OF](canonical(name)) === null;
  }

  /** The verdict on `name`, with the refusing layer. `tool` is the name as asked. */
  decide(name: string): ToolDecision {
    const reason = this[REFUSAL_OF](canonical(name));
    return reason === null ? { tool: name, permitted: true, reason: null } : { tool: name, permitted: false, reason };
  }

  /** Throws ToolNotPermittedError unless `name` is permitted. */
  check(name: string): void {
    const reason = this[REFUSAL_OF](canonical(name));
    if (reason !== null)
      throw new ToolNotPermittedError({ tool: name, agent: this.agent, reason, permitted: this.names });
  }

  /**
   * The allowlist a peer agent runs under when this one delegates to it: the peer's declaration held to
   * this allowlist. A name this allowlist lacks is refused as `caller` (the delegating agent is the
   * peer's caller); a name this allowlist had cut keeps its reason. Chains only shrink.
   */
  narrowed(
    peerDeclared: Iterable<string>,
    options: { readonly agent?: string; readonly confusables?: ConfusablesMode } = {},
  ): ToolAllowlist {
    const agent = agentName(options.agent);
    const where = `agent ${JSON.stringify(agent)} declaration`;
    const spellings = declaredEntries(peerDeclared, where);
    const forms = declaredForms(spellings, where);
    checkConfusables(forms, spellings, options.confusables, where);
    const verdicts = new Uint8Array(spellings.length);
    for (const [form, at] of forms) {
      const parent = this.#forms.get(form);
      verdicts[at] = parent === undefined ? CALLER : this.#verdicts[parent]!;
    }
    return unnamedUnless(options.agent, new ToolAllowlist(agent, forms, spellings, verdicts));
  }

  /** The declared spelling of a canonical form, or undefined when the agent does not declare it. */
  declaredSpelling(form: string): string | undefined {
    const at = this.#forms.get(form);
    return at === undefined ? undefined : this.#spellings[at];
  }

  /** @internal The refusing layer for a canonical form, or null when permitted. */
  [REFUSAL_OF](form: string): RefusalLayer | null {
    const at = this.#forms.get(form);
    return at === undefined ? 'not_declared' : (LAYER_OF[this.#verdicts[at]!] ?? null);
  }
}

// A name's verdict as an allowlist keeps it, one byte a position (issue 25: 100,000 names): an array of
// layer names takes eight bytes a position.
const PERMITTED = 1;
const TENANT = 2;
const CALLER = 3;
/** verdict → the refusing layer; null for PERMITTED (0, no form's first position, is never read) */
const LAYER_OF: readonly (RefusalLayer | null)[] = [null, null, 'tenant', 'caller'];

/** Options of {@link ToolAllowlistGuard.resolving}: the same as {@link ToolAllowlistOptions}. */
export type ToolAllowlistGuardOptions = ToolAllowlistOptions;

/**
 * An allowlist that keeps the tally a run's budget is charged with: every `decide` and `check` is an
 * attempt, every refused one a refusal (a refused `check` counts once). A refusal that is free is one a
 * looping model will attempt indefinitely.
 */
export class ToolAllowlistGuard {
  readonly name = 'tool_allowlist' as const;
  #allowlist: ToolAllowlist;
  #attempts = 0;
  #refusals = 0;

  constructor(allowlist: ToolAllowlist) {
    if (!(allowlist instanceof ToolAllowlist)) {
      throw new TypeError(`ToolAllowlistGuard expects a ToolAllowlist, got ${describe(allowlist)}`);
    }
    this.#allowlist = allowlist;
  }

  /** The allowlist the next `decide`/`check` is made against. */
  get allowlist(): ToolAllowlist {
    return this.#allowlist;
  }

  /**
   * Points the guard at the allowlist in force for the next dispatch, keeping the tally. A runner resolves
   * the allowlist per dispatch (a tenant change applies to the next call) while the budget is charged for
   * the whole run, so the tally must outlive any one allowlist.
   */
  follow(allowlist: ToolAllowlist): this {
    if (!(allowlist instanceof ToolAllowlist)) {
      throw new TypeError(`ToolAllowlistGuard.follow expects a ToolAllowlist, got ${describe(allowlist)}`);
    }
    this.#allowlist = allowlist;
    return this;
  }

  static resolving(declared: Iterable<string>, options?: ToolAllowlistGuardOptions): ToolAllowlistGuard {
    return new ToolAllowlistGuard(ToolAllowlist.resolve(declared, options));
  }

  get attempts(): number {
    return this.#attempts;
  }

  get refusals(): number {
    return this.#refusals;
  }

  decide(name: string): ToolDecision {
    const decision = this.allowlist.decide(name);
    this.#attempts++;
    if (!decision.permitted) this.#refusals++;
    return decision;
  }

  check(name: string): void {
    const decision = this.decide(name);
    if (!decision.permitted) {
      throw new ToolNotPermittedError({
        tool: name,
        agent: this.allowlist.agent,
        reason: decision.reason,
        permitted: this.allowlist.names,
      });
    }
  }

  /** The given names that are permitted, in the given order. Does not count: it is what the model is shown, not a call. */
  permitted(names: Iterable<string>): string[] {
    const out: string[] = [];
    for (const name of names) if (this.allowlist.permits(name)) out.push(name);
    return out;
  }

  /** A guard for a peer agent: this allowlist narrowed by the peer's declaration, with fresh counters. */
  delegating(peerDeclared: Iterable<string>, options?: { readonly agent?: string }): ToolAllowlistGuard {
    return new ToolAllowlistGuard(this.allowlist.narrowed(peerDeclared, options));
  }
}

/** Allowlists resolved without an agent's name: they show the default `agent` and name no agent. */
const UNNAMED = new WeakSet<ToolAllowlist>();

function unnamedUnless(agent: unknown, list: ToolAllowlist): ToolAllowlist {
  if (agent === undefined) UNNAMED.add(list);
  return list;
}

/**
 * @internal The agent an allowlist was resolved for, or null when none was named (its `agent` then shows
 * the default `agent`): what an approval binds, so a list naming no agent never shares a binding with the
 * agent named `agent`.
 */
export function namedAgentOf(list: ToolAllowlist): string | null {
  return UNNAMED.has(list) ? null : list.agent;
}

function agentName(agent: unknown): string {
  if (agent === undefined) return 'agent';
  if (typeof agent !== 'string' || agent === '') {
    throw new TypeError(`option "agent" must be a non-empty string, got ${describe(agent)}`);
  }
  return agent;
}

function checkConfusables(
  forms: ReadonlyMap<string, number>,
  spellings: readonly string[],
  option: unknown,
  where: string,
): void {
  // Resolution does not check unless asked: look-alike names are a declaration-time finding (issue 12).
  const mode = option === undefined ? 'off' : confusablesMode(option);
  if (mode === 'off') return;
  const names: string[] = [];
  for (const at of forms.values()) names.push(spellings[at]!);
  reportConfusables(findConfusables(names), mode, where);
}

/**
 * @internal A declaration's entries as an array that will not change: a frozen array as is, anything
 * else copied (a plain array could be changed by its owner after it was checked).
 */
function declaredEntries(declared: Iterable<string>, where: string): readonly string[] {
  if (Array.isArray(declared)) return Object.isFrozen(declared) ? declared : declared.slice();
  return canonicalIndex(declared, where).names;
}

/**
 * @internal The canonical forms of a declaration, each mapped to the position of its first spelling.
 * A name that is not a string, is empty or holds invisible characters, and two spellings of one form,
 * are ConfigurationErrors (the same spelling twice is a repetition, not an ambiguity).
 */
export function declaredForms(spellings: readonly unknown[], where: string): Map<string, number> {
  const forms = new Map<string, number>();
  for (let i = 0; i < spellings.length; i++) {
    const form = declaredName(spellings[i], where);
    // One Map operation per name (bulk declarations, issue 12): a form met before shows as a size that
    // did not grow; its first position is then put back, and a different spelling is a collision.
    const size = forms.size;
    forms.set(form, i);
    if (forms.size === size) repeatedForm(forms, spellings, form, i, where);
  }
  return forms;
}

/** `form` at `i` was met before: keep its first position; two different spellings are a collision. */
function repeatedForm(
  forms: Map<string, number>,
  spellings: readonly unknown[],
  form: string,
  i: number,
  where: string,
): void {
  let first = 0;
  while (declaredName(spellings[first], where) !== form) first++;
  forms.set(form, first);
  // canonicalIndex throws the collision error, naming both spellings.
  if (spellings[first] !== spellings[i]) canonicalIndex(spellings, where);
}

/** @internal The canonical forms of a tenant or caller layer, each mapped to the position of its first entry. */
export function layerForms(entries: readonly unknown[], which: 'tenant' | 'caller'): Map<string, number> {
  const forms = new Map<string, number>();
  for (let i = 0; i < entries.length; i++) {
    const name = entries[i];
    if (typeof name !== 'string') throw layerNameError(which, name);
    const form = canonical(name);
    if (!forms.has(form)) forms.set(form, i);
  }
  return forms;
}

/** @internal Throws unless `layer` is an iterable of names (a string is one name, not a layer). */
export function checkLayer(layer: object | string, which: 'tenant' | 'caller'): void {
  if (typeof layer === 'string' || typeof (layer as Iterable<string>)[Symbol.iterator] !== 'function') {
    throw new ConfigurationError(
      `${which} layer: expected an iterable of tool names, null or undefined, got ${describe(layer)}`,
    );
  }
}

/** @internal The error for a layer entry that is not a string. */
export function layerNameError(which: 'tenant' | 'caller', name: unknown): ConfigurationError {
  return new ConfigurationError(`${which} layer: a tool name must be a string, got ${describe(name)}`);
}

/**
 * By position, the verdict of the tenant and caller marks on each declared name. Where both would cut a
 * name, the tenant is named: it is the broader, standing reason.
 */
function layerVerdicts(
  forms: ReadonlyMap<string, number>,
  length: number,
  tenant: Uint8Array | null,
  caller: Uint8Array | null,
): Uint8Array {
  // A function of its own, as are permittedNames, declaredForms and layerMarks: inside `resolve`, a loop over
  // every name lost its optimised code with `resolve`'s, which a GC drops when it frees the last object of
  // the shape of the caller's options (its property reads' feedback goes with it); the next call then ran
  // the loop in the interpreter until it was compiled again (issue 25: 100,000 names, a GC between calls).
  const verdicts = new Uint8Array(length);
  if (forms.size === length)
    // No spelling repeats: every position is its form's first, read in order rather than off the map.
    for (let at = 0; at < length; at++)
      verdicts[at] = tenant && !tenant[at] ? TENANT : caller && !caller[at] ? CALLER : PERMITTED;
  else
    for (const at of forms.values())
      verdicts[at] = tenant && !tenant[at] ? TENANT : caller && !caller[at] ? CALLER : PERMITTED;
  return verdicts;
}

/**
 * The permitted spellings, in declaration order: by position rather than off the map (a form's position
 * is its first spelling's, so the order is the same), in a list sized once (one grown by push is copied
 * at each growth).
 */
function permittedNames(verdicts: Uint8Array, spellings: readonly string[]): string[] {
  let count = 0;
  for (let at = 0; at < verdicts.length; at++) if (verdicts[at] === PERMITTED) count++;
  const names = new Array<string>(count);
  for (let at = 0, k = 0; k < count; at++) if (verdicts[at] === PERMITTED) names[k++] = spellings[at]!;
  return names;
}

function layerMarks(
  layer: AllowlistLayer,
  which: 'tenant' | 'caller',
  forms: ReadonlyMap<string, number>,
  spellings: readonly string[],
): Uint8Array | null {
  if (layer === null || layer === undefined) return null;
  checkLayer(layer, which);
  const length = spellings.length;
  const marks = new Uint8Array(length);
  // A layer is often a subset of the declaration in its order: an entry spelled as the declaration's next
  // entry is that position without a canonical form or a look-up (the same spelling has the same form),
  // when no spelling repeats in the declaration (then every position is its form's first).
  const walk = forms.size === length;
  let next = 0;
  for (const name of layer) {
    if (typeof name !== 'string') throw layerNameError(which, name);
    // An entry the layer leaves out (a plan that cuts one tool) is stepped over by one more comparison.
    const at = !walk
      ? forms.get(canonical(name))
      : spellings[next] === name
        ? next
        : spellings[next + 1] === name
          ? next + 1
          : forms.get(canonical(name));
    if (at !== undefined) {
      marks[at] = 1;
      next = at + 1;
    }
  }
  return marks;
}
