/**
 * Limits as written (a `LimitRule`) and checked once into what the Limiter matches and keys by (`Compiled`):
 * the Limiter's constructor and the policy-file loader compile them here.
 */
import { canonical, describe } from '../names.js';

/**
 * The longest window a counter keeps: 1000 years. A longer one cannot be kept: the Redis script writes a key's
 * expiry as a 64-bit integer (past 2^63 ms it turns negative, and PEXPIREAT with it deletes the key, so nothing
 * is ever counted), and a refusal's retry time must be a Date. Limits (`parseWindow`) refuse it as written, every
 * counter store's `consume` refuses a charge with it, and the policy file schema's `window` has it as `maximum`.
 * Here, below the stores, which import it (the limits import nothing of the stores).
 */
export const MAX_WINDOW_MS = 365_250 * 86_400_000;

/** What a limit counts per: one counter per distinct value (a missing value counts under one shared "none"). */
export type LimitDimension = 'tenant' | 'caller' | 'agent' | 'run';

const DIMENSIONS: readonly LimitDimension[] = ['tenant', 'caller', 'agent', 'run'];

/** One limit. */
export interface LimitRule {
  /** Names the limit in refusals, `explain` and counter keys. */
  readonly name: string;
  /** One counter per distinct (tenant, caller, …) of these. @default [] (one counter for all calls) */
  readonly per?: readonly LimitDimension[];
  /** Only calls to these tools (declared names; compared canonically). @default every tool */
  readonly tools?: readonly string[];
  /** Only calls to tools with one of these tags. With `tools`, a call matching either counts. */
  readonly tags?: readonly string[];
  /**
   * Slots (or cost) per window: a number, or `{ plan: 'refunds_per_day' }` — the value of that name in the
   * calling tenant's plan (the Limiter's `tenants`), `default` for a tenant whose plan has none. A tenant's
   * `limits` entry for this limit's name replaces either. A call whose max cannot be found (no tenant, or no
   * value and no default) is refused at stage `limit`, naming what is missing.
   */
  readonly max: number | PlanMax;
  /**
   * The sliding window: milliseconds or `'500ms'`, `'30s'`, `'10m'`, `'1h'`, `'1d'`. Absent: no window — the
   * counter lasts as long as its key (use with `per: ['run']` for a per-run budget, kept 30 days).
   */
  readonly window?: number | string;
  /** What one call costs. @default 1 */
  readonly cost?: number;
  /** Costs of particular tools (declared names), over `cost`. */
  readonly costs?: Readonly<Record<string, number>>;
}

/** A limit's max read from the calling tenant's plan. */
export interface PlanMax {
  /** The name of the value in the tenant's plan (`refunds_per_day`). */
  readonly plan: string;
  /** For a tenant whose plan has no such value. Absent: such a tenant's calls are refused. */
  readonly default?: number;
}

/** A limit ready to match (internal). */
export interface Compiled {
  readonly rule: LimitRule;
  readonly per: readonly LimitDimension[];
  readonly tools: ReadonlySet<string> | null;
  readonly tags: ReadonlySet<string> | null;
  readonly windowMs: number | null;
  readonly cost: number;
  readonly costs: ReadonlyMap<string, number>;
  /** The limit's own max; null when it is read from the plan (`planMax`). */
  readonly max: number | null;
  readonly planMax: PlanMax | null;
}

/**
 * Checks a list of limits (the Limiter's constructor and the policy-file loader): a TypeError naming
 * `limits[i].field` for the first bad one, or a name used twice.
 */
export function compileLimits(limits: readonly LimitRule[]): readonly Compiled[] {
  const names = new Set<string>();
  return limits.map((rule, i) => {
    const compiled = compileLimit(rule, `limits[${i}]`);
    if (names.has(rule.name)) throw new TypeError(`limits[${i}].name: ${JSON.stringify(rule.name)} is used twice`);
    names.add(rule.name);
    return compiled;
  });
}

/** Parses a window: ms, or a number with ms / s / m / h / d; at least 1 ms, at most 1000 years (MAX_WINDOW_MS). */
export function parseWindow(value: number | string, what = 'window'): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 1) throw new TypeError(`${what} must be >= 1 ms, got ${describe(value)}`);
    return longest(value, value, what);
  }
  const m = typeof value === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(value) : null;
  if (!m) throw new TypeError(`${what} must be milliseconds or like '30s', '10m', '1h', '1d', got ${describe(value)}`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms' | 's' | 'm' | 'h' | 'd'];
  const ms = Number(m[1]) * unit;
  if (ms < 1) throw new TypeError(`${what} must be at least 1 ms, got ${describe(value)}`);
  return longest(ms, value, what);
}

/** `ms` unless it is longer than a counter store can keep (its key would expire at once: nothing counted). */
function longest(ms: number, value: number | string, what: string): number {
  if (ms > MAX_WINDOW_MS)
    throw new TypeError(`${what} must be at most 1000 years (${MAX_WINDOW_MS} ms), got ${describe(value)}`);
  return ms;
}

function compileLimit(rule: LimitRule, at: string): Compiled {
  if (typeof rule !== 'object' || rule === null) throw new TypeError(`${at} must be an object, got ${describe(rule)}`);
  if (typeof rule.name !== 'string' || rule.name.length === 0)
    throw new TypeError(`${at}.name must be a non-empty string, got ${describe(rule.name)}`);
  const per = rule.per ?? [];
  if (!Array.isArray(per) || per.some((d) => !DIMENSIONS.includes(d)))
    throw new TypeError(`${at}.per must list of ${DIMENSIONS.join(', ')}, got ${describe(per)}`);
  const planMax = planMaxOf(rule.max, at);
  const cost = rule.cost ?? 1;
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0)
    throw new TypeError(`${at}.cost must be a finite number >= 0, got ${describe(cost)}`);
  const names = (list: readonly string[] | undefined, field: string): ReadonlySet<string> | null => {
    if (list === undefined) return null;
    if (!Array.isArray(list) || list.some((n) => typeof n !== 'string' || n.length === 0))
      throw new TypeError(`${at}.${field} must be an array of names, got ${describe(list)}`);
    return new Set(field === 'tools' ? list.map((n) => canonical(n)) : list);
  };
  const costs = new Map<string, number>();
  for (const [tool, value] of Object.entries(rule.costs ?? {})) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      throw new TypeError(`${at}.costs[${JSON.stringify(tool)}] must be a finite number >= 0, got ${describe(value)}`);
    costs.set(canonical(tool), value);
  }
  return {
    rule,
    per: [...new Set(per)],
    tools: names(rule.tools, 'tools'),
    tags: names(rule.tags, 'tags'),
    windowMs: rule.window === undefined ? null : parseWindow(rule.window, `${at}.window`),
    cost,
    costs,
    max: planMax === null ? (rule.max as number) : null,
    planMax,
  };
}

/** A limit's `max` checked: null for a number, the plan reference for `{ plan, default? }`. */
function planMaxOf(max: unknown, at: string): PlanMax | null {
  if (typeof max === 'number') {
    if (!Number.isFinite(max) || max < 0)
      throw new TypeError(`${at}.max must be a finite number >= 0, got ${describe(max)}`);
    return null;
  }
  const m = max as Record<string, unknown> | null;
  if (typeof m !== 'object' || m === null || typeof m['plan'] !== 'string' || m['plan'].length === 0)
    throw new TypeError(`${at}.max must be a number >= 0 or { plan: name, default? }, got ${describe(max)}`);
  const extra = Object.keys(m).find((k) => k !== 'plan' && k !== 'default');
  if (extra !== undefined) throw new TypeError(`${at}.max has an unknown field ${JSON.stringify(extra)}`);
  const fallback = m['default'];
  if (fallback !== undefined && (typeof fallback !== 'number' || !Number.isFinite(fallback) || fallback < 0))
    throw new TypeError(`${at}.max.default must be a finite number >= 0, got ${describe(fallback)}`);
  return Object.freeze({ plan: m['plan'], ...(fallback !== undefined ? { default: fallback } : {}) });
}
