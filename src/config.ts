/**
 * Configuration shapes that several parts take, defined once: the scope map (the runner's `scopes`
 * option and a policy file's `scopes:`), tenant limits (the runner's provider answers and a policy
 * file's `tenants:`), and a gate context given as a value or as a function of the request (adapters,
 * the MCP proxy and gateway).
 */
import { canonical, describe } from './names.js';

/**
 * Capability scopes to tool names. A caller's scopes are mapped through it at the boundary, and a scope
 * it does not map covers nothing (an unknown scope never widens access); the gate only sees tool names.
 *
 * @example
 * const scopes: ScopeMap = { 'billing:write': ['refund'], 'catalog:read': ['search', 'quote'] };
 */
export type ScopeMap = Readonly<Record<string, readonly string[]>>;

export type { ContextSource } from './contracts/gate.js';

/**
 * What a tenant's plan entitles it to. Read from the provider at every dispatch, so a change applies to
 * the next tool call of a running run.
 */
export interface TenantLimits {
  /** The tenant layer: null/undefined states nothing; an empty list refuses everything. @default undefined */
  readonly tools?: Iterable<string> | null;
  /** Model turns in one run, peers' turns included. @default the runner's `maxIterations` */
  readonly maxIterations?: number;
  /** Tool calls attempted in one run, refused ones included. @default Infinity */
  readonly maxToolCalls?: number;
  /** Summed cost of the calls attempted in one run (see the runner's `costOf`). @default Infinity */
  readonly maxCost?: number;
}

/** A scope map checked and frozen (names frozen too). */
export function parseScopeMap(value: unknown, where: string): ScopeMap {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new TypeError(`${where} must be a record of scope → tool names, got ${describe(value)}`);
  const out: Record<string, readonly string[]> = {};
  for (const [scope, names] of Object.entries(value))
    out[scope] = Object.freeze(stringList(names, `${where}[${JSON.stringify(scope)}]`));
  return Object.freeze(out);
}

/** The tool names a caller's scopes cover under `map`: first spelling per canonical form, in scope order. */
export function toolsOfScopes(map: ScopeMap, scopes: Iterable<string>): string[] {
  const out = new Map<string, string>();
  for (const scope of scopes) {
    if (!Object.hasOwn(map, scope)) continue;
    for (const name of map[scope]!) {
      const form = canonical(name);
      if (!out.has(form)) out.set(form, name);
    }
  }
  return [...out.values()];
}

/**
 * Tenant limits checked and frozen, `tools` as a frozen array: the one reader for the runner's tenant
 * provider answers and a policy file's tenants. `where` names the tenant in errors. With `live`, a `tools`
 * array of strings is kept as given, not copied (the runner, per dispatch: the gate's allowlist step indexes
 * the provider's own array and checks it against its snapshot at every call, so a plan changed in place
 * applies at the next call); any other iterable is still copied.
 */
export function parseTenantLimits(
  raw: unknown,
  where: string,
  live = false,
): TenantLimits & { readonly tools?: readonly string[] } {
  if (typeof raw !== 'object' || raw === null)
    throw new TypeError(`the limits of ${where} must be an object, got ${describe(raw)}`);
  const limits = raw as TenantLimits;
  const out: { tools?: readonly string[]; maxIterations?: number; maxToolCalls?: number; maxCost?: number } = {};
  const tools: unknown = limits.tools;
  // Live (the runner's provider, read per call): an array is kept as it is — the gate's allowlist step checks
  // its entries when it indexes or scans it (a non-string is a ConfigurationError there), so reading a plan of
  // N names costs nothing per call here.
  if (live && Array.isArray(tools)) out.tools = tools as string[];
  else if (tools !== undefined && tools !== null) out.tools = Object.freeze(stringList(tools, `${where} tools`));
  for (const cap of ['maxIterations', 'maxToolCalls', 'maxCost'] as const) {
    const value: unknown = limits[cap];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || Number.isNaN(value) || value < 0)
      throw new TypeError(`${where} ${cap} must be a number >= 0, got ${describe(value)}`);
    out[cap] = value;
  }
  return Object.freeze(out);
}

/** An iterable of strings (not a string) as an array; anything else throws a TypeError naming `option`. */
export function stringList(value: unknown, option: string): string[] {
  if (typeof value === 'string' || typeof (value as Iterable<unknown> | null)?.[Symbol.iterator] !== 'function')
    throw new TypeError(`"${option}" must be an iterable of strings, got ${describe(value)}`);
  const out: string[] = [];
  for (const item of value as Iterable<unknown>) {
    if (typeof item !== 'string') throw new TypeError(`"${option}" must hold strings, got ${describe(item)}`);
    out.push(item);
  }
  return out;
}
