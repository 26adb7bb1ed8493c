/**
 * The "Tool allowlists" spec: three layers (agent, tenant, caller) intersected once, at the boundary.
 */
import { ConfigurationError, ToolNotPermittedError, type RefusalLayer } from './errors.js';
import { canonical, canonicalIndex, describe } from './names.js';
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
  /** canonical form → declared spelling, for every declared name */
  readonly #declared: ReadonlyMap<string, string>;
  /** canonical form → the layer that cut it, for declared names that are not permitted */
  readonly #cut: ReadonlyMap<string, RefusalLayer>;

  private constructor(agent: string, declared: ReadonlyMap<string, string>, cut: ReadonlyMap<string, RefusalLayer>) {
    this.agent = agent;
    this.#declared = declared;
    this.#cut = cut;
    const names: string[] = [];
    for (const [form, name] of declared) if (!cut.has(form)) names.push(name);
    this.names = Object.freeze(names);
    Object.freeze(this);
  }

  /**
   * Intersects the agent's declaration with the tenant and caller layers. Two declared names with one
   * canonical form, or a declared name that is empty or holds invisible characters, is a ConfigurationError.
   */
  static resolve(declared: Iterable<string>, options: ToolAllowlistOptions = {}): ToolAllowlist {
    const agent = agentName(options.agent);
    const where = `agent ${JSON.stringify(agent)} declaration`;
    const { index } = canonicalIndex(declared, where);
    checkConfusables(index, options.confusables, where);
    const tenant = layerSet(options.tenant, 'tenant');
    const caller = layerSet(options.caller, 'caller');
    return ToolAllowlist[FROM_FORMS](agent, index, tenant, caller);
  }

  /** @internal The intersection of a validated declaration (canonical form → spelling) with two layers' forms. */
  static [FROM_FORMS](
    agent: string,
    declared: ReadonlyMap<string, string>,
    tenant: FormSet | null,
    caller: FormSet | null,
  ): ToolAllowlist {
    const cut = new Map<string, RefusalLayer>();
    for (const form of declared.keys()) {
      // Where both would cut a name, the tenant is named: it is the broader, standing reason.
      if (tenant && !tenant.has(form)) cut.set(form, 'tenant');
      else if (caller && !caller.has(form)) cut.set(form, 'caller');
    }
    return new ToolAllowlist(agent, declared, cut);
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
    const { index } = canonicalIndex(peerDeclared, where);
    checkConfusables(index, options.confusables, where);
    const cut = new Map<string, RefusalLayer>();
    for (const form of index.keys()) {
      const parent = this[REFUSAL_OF](form);
      if (parent === 'tenant' || parent === 'caller') cut.set(form, parent);
      else if (parent === 'not_declared') cut.set(form, 'caller');
    }
    return new ToolAllowlist(agent, index, cut);
  }

  /** The declared spelling of a canonical form, or undefined when the agent does not declare it. */
  declaredSpelling(form: string): string | undefined {
    return this.#declared.get(form);
  }

  /** @internal The refusing layer for a canonical form, or null when permitted. */
  [REFUSAL_OF](form: string): RefusalLayer | null {
    if (!this.#declared.has(form)) return 'not_declared';
    return this.#cut.get(form) ?? null;
  }
}

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

function agentName(agent: unknown): string {
  if (agent === undefined) return 'agent';
  if (typeof agent !== 'string' || agent === '') {
    throw new TypeError(`option "agent" must be a non-empty string, got ${describe(agent)}`);
  }
  return agent;
}

function checkConfusables(index: ReadonlyMap<string, string>, option: unknown, where: string): void {
  // Resolution does not check unless asked: look-alike names are a declaration-time finding (issue 12).
  const mode = option === undefined ? 'off' : confusablesMode(option);
  if (mode !== 'off') reportConfusables(findConfusables(index.values()), mode, where);
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

function layerSet(layer: AllowlistLayer, which: 'tenant' | 'caller'): Set<string> | null {
  if (layer === null || layer === undefined) return null;
  checkLayer(layer, which);
  const set = new Set<string>();
  for (const name of layer) {
    if (typeof name !== 'string') throw layerNameError(which, name);
    set.add(canonical(name));
  }
  return set;
}
