/**
 * Limits as policy: "5 refunds per caller per hour", "1,000 calls per tenant per day", "cost 20 per run".
 * A limit counts the attempts of the calls it selects (by tool name or tag) per tenant / caller / agent / run
 * over a sliding window, in a {@link CounterStore} shared by every worker. It is charged at step 6 of the
 * dispatch path, for every route:
 *
 * - every attempt counts, refused ones too (the spec's rule: a call the policy refused still spends a slot);
 * - an attempt that does not fit is refused at stage `limit`, with a reason the model can read that says
 *   when it may retry — and it spends nothing (all matching limits are charged together or not at all);
 * - a store that fails refuses the call (fail closed).
 */
import { canonical, describe, displaySafe } from '../names.js';
import type { CounterCharge, CounterStore, CounterVerdict } from '../stores/types.js';

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
  /** Slots (or cost) per window. */
  readonly max: number;
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

/** Who is calling what: what a limit is matched and keyed by. */
export interface LimitSubject {
  readonly tenant: string | null;
  readonly caller: string | null;
  readonly agent: string;
  readonly runId: string | null;
  /** The canonical tool name. */
  readonly tool: string;
  readonly tags: readonly string[];
}

/** A limit's counter as `explain` shows it. */
export interface LimitCounter {
  readonly limit: string;
  readonly key: string;
  readonly used: number;
  readonly max: number;
  /** This call's cost. */
  readonly cost: number;
  readonly windowMs: number | null;
}

/** What {@link Limiter.charge} decided. */
export type LimitVerdict =
  | { readonly allowed: true; readonly charged: readonly LimitCounter[] }
  | {
      readonly allowed: false;
      /** A limit was full: the Decision's stage `limit`. */
      readonly stage: 'limit';
      /** The limit that refused, and its counter (not charged). */
      readonly limit: string;
      readonly counter: LimitCounter | null;
      readonly store?: never;
      /** Model-readable: which limit, and when to retry. */
      readonly reason: string;
      /** Milliseconds until a retry can fit; null: not within this window. */
      readonly retryAfterMs: number | null;
    }
  | {
      readonly allowed: false;
      /**
       * The counter store failed or answered something other than a verdict: the Decision's stage `store`.
       * No limit refused (none is named, none was found full); nothing is known to be charged.
       */
      readonly stage: 'store';
      /** The store's {@link CounterStore.name}. */
      readonly store: string;
      readonly limit?: never;
      readonly counter: null;
      /** Model-readable: which store, and that the call may be tried again once it answers. */
      readonly reason: string;
      readonly retryAfterMs: null;
    };

/** Options of {@link Limiter}. */
export interface LimiterOptions {
  /** Where the counters live: memory for one process, Redis (or SQLite) for many. */
  readonly counters: CounterStore;
  readonly limits: readonly LimitRule[];
  /** Prefix of counter keys (one deployment's limits never count another's). @default 'limit' */
  readonly prefix?: string;
  /** The clock, for retry times in reasons. @default Date.now */
  readonly now?: () => number;
}

/** How long a windowless counter is kept. */
const NO_WINDOW_MS = 30 * 86_400_000;

/** A limit ready to match (internal). */
export interface Compiled {
  readonly rule: LimitRule;
  readonly per: readonly LimitDimension[];
  readonly tools: ReadonlySet<string> | null;
  readonly tags: ReadonlySet<string> | null;
  readonly windowMs: number | null;
  readonly cost: number;
  readonly costs: ReadonlyMap<string, number>;
}

/**
 * Charges calls against limits shared through a counter store.
 *
 * @example
 * const limiter = new Limiter({
 *   counters: redis.counters,
 *   limits: [
 *     { name: 'refunds', per: ['caller'], tools: ['refund'], max: 5, window: '1h' },
 *     { name: 'daily', per: ['tenant'], max: 1000, window: '1d' },
 *   ],
 * });
 */
export class Limiter {
  readonly limits: readonly LimitRule[];
  readonly #counters: CounterStore;
  readonly #compiled: readonly Compiled[];
  readonly #prefix: string;
  readonly #now: () => number;
  readonly #storeName: string;

  constructor(options: LimiterOptions) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`Limiter expects an options object, got ${describe(options)}`);
    const counters = options.counters;
    if (
      typeof counters !== 'object' ||
      counters === null ||
      typeof counters.consume !== 'function' ||
      typeof counters.peek !== 'function'
    )
      throw new TypeError(`Limiter option "counters" must be a CounterStore, got ${describe(counters)}`);
    if (!Array.isArray(options.limits))
      throw new TypeError(`Limiter option "limits" must be an array, got ${describe(options.limits)}`);
    const prefix = options.prefix ?? 'limit';
    if (typeof prefix !== 'string' || prefix.length === 0)
      throw new TypeError(`Limiter option "prefix" must be a non-empty string, got ${describe(prefix)}`);
    this.#compiled = compileLimits(options.limits);
    this.limits = Object.freeze(options.limits.map((r) => Object.freeze({ ...r })));
    this.#counters = counters;
    this.#prefix = prefix;
    this.#now = options.now ?? Date.now;
    const name = counters.name;
    this.#storeName = typeof name === 'string' && name.length > 0 ? displaySafe(name) : 'the counter store';
  }

  /** The limits that select this call, with their keys and costs (nothing is read or charged). */
  applicable(subject: LimitSubject): CounterCharge[] {
    const out: CounterCharge[] = [];
    for (const c of this.#compiled) {
      if (!selects(c, subject)) continue;
      out.push({
        key: this.#key(c, subject),
        cost: c.costs.get(subject.tool) ?? c.cost,
        limit: c.rule.max,
        windowMs: c.windowMs ?? NO_WINDOW_MS,
      });
    }
    return out;
  }

  /**
   * Charges one attempt against every limit that selects it, all or none. A refused verdict spent nothing.
   * A store that fails gives a refusal (fail closed).
   */
  async charge(subject: LimitSubject): Promise<LimitVerdict> {
    const charges = this.applicable(subject);
    if (charges.length === 0) return { allowed: true, charged: [] };
    const matched = this.#compiled.filter((c) => selects(c, subject));
    let answer: unknown;
    try {
      answer = await this.#counters.consume(charges);
    } catch (error) {
      return this.#storeFailed(`failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    // Only a verdict of the contract's shape decides; anything else is the store's error (fail closed).
    const problem = verdictProblem(answer, charges.length);
    if (problem !== null) return this.#storeFailed(`answered garbage (${problem})`);
    const verdict = answer as CounterVerdict;
    const counterOf = (i: number, used: number): LimitCounter => ({
      limit: matched[i]!.rule.name,
      key: charges[i]!.key,
      used,
      max: charges[i]!.limit,
      cost: charges[i]!.cost,
      windowMs: matched[i]!.windowMs,
    });
    if (verdict.allowed) return { allowed: true, charged: charges.map((_, i) => counterOf(i, verdict.used[i] ?? 0)) };
    const i = verdict.index;
    const c = matched[i]!;
    const counter = counterOf(i, verdict.used[i] ?? 0);
    // A windowless counter never frees a slot: there is no time to retry at.
    const retryAfterMs = c.windowMs === null ? null : verdict.retryAfterMs;
    return {
      allowed: false,
      stage: 'limit',
      limit: c.rule.name,
      counter,
      retryAfterMs,
      reason: refusalText(c, subject, counter, retryAfterMs, this.#now()),
    };
  }

  #storeFailed(what: string): LimitVerdict {
    const store = this.#storeName;
    return {
      allowed: false,
      stage: 'store',
      store,
      counter: null,
      retryAfterMs: null,
      reason:
        `The call was not run: its limits could not be checked, because the counter store (${store}) ${what}. ` +
        'No limit was found full; the call may be tried again once the store answers.',
    };
  }

  /** The counters of every limit that selects this call, read now (for `explain`). */
  async explain(subject: LimitSubject): Promise<LimitCounter[]> {
    const charges = this.applicable(subject);
    const matched = this.#compiled.filter((c) => selects(c, subject));
    return Promise.all(
      charges.map(async (ch, i) => ({
        limit: matched[i]!.rule.name,
        key: ch.key,
        used: await this.#counters.peek(ch.key, ch.windowMs),
        max: ch.limit,
        cost: ch.cost,
        windowMs: matched[i]!.windowMs,
      })),
    );
  }

  #key(c: Compiled, s: LimitSubject): string {
    const values = c.per.map((d) => {
      const v = d === 'tenant' ? s.tenant : d === 'caller' ? s.caller : d === 'agent' ? s.agent : s.runId;
      return `${d}=${v === null ? '' : encodeURIComponent(v)}`;
    });
    return [this.#prefix, encodeURIComponent(c.rule.name), ...values].join(':');
  }
}

/**
 * What is wrong with a store's answer to `consume` of `n` charges, or null for a verdict of the contract's
 * shape: `allowed` exactly true or false, `used` n finite numbers (on a refusal, at least up to the refused
 * charge), a refusal's `index` a charge's and its `retryAfterMs` null or >= 0. `{ allowed: 'no' }` is garbage,
 * never an allow.
 */
function verdictProblem(answer: unknown, n: number): string | null {
  if (typeof answer !== 'object' || answer === null) return `not a verdict: ${describe(answer)}`;
  const v = answer as Record<string, unknown>;
  const allowed = v['allowed'];
  if (allowed !== true && allowed !== false) return `"allowed" is ${describe(allowed)}, not true or false`;
  const used = v['used'];
  if (!Array.isArray(used) || used.some((u) => typeof u !== 'number' || !Number.isFinite(u)))
    return `"used" is ${describe(used)}, not a list of numbers`;
  if (allowed) return used.length === n ? null : `"used" has ${used.length} totals for ${n} charges`;
  const index = v['index'];
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= n)
    return `"index" is ${describe(index)}, not one of the ${n} charges`;
  if (used.length <= index) return `"used" has no total for the refused charge ${index}`;
  const retry = v['retryAfterMs'];
  if (retry !== null && (typeof retry !== 'number' || !Number.isFinite(retry) || retry < 0))
    return `"retryAfterMs" is ${describe(retry)}, not null or a number >= 0`;
  return null;
}

function selects(c: Compiled, s: LimitSubject): boolean {
  if (c.tools === null && c.tags === null) return true;
  if (c.tools?.has(s.tool)) return true;
  return c.tags !== null && s.tags.some((t) => c.tags!.has(t));
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

/** Parses a window: ms, or a number with ms / s / m / h / d. */
export function parseWindow(value: number | string, what = 'window'): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 1) throw new TypeError(`${what} must be >= 1 ms, got ${describe(value)}`);
    return value;
  }
  const m = typeof value === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(value) : null;
  if (!m) throw new TypeError(`${what} must be milliseconds or like '30s', '10m', '1h', '1d', got ${describe(value)}`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms' | 's' | 'm' | 'h' | 'd'];
  const ms = Number(m[1]) * unit;
  if (ms < 1) throw new TypeError(`${what} must be at least 1 ms, got ${describe(value)}`);
  return ms;
}

function compileLimit(rule: LimitRule, at: string): Compiled {
  if (typeof rule !== 'object' || rule === null) throw new TypeError(`${at} must be an object, got ${describe(rule)}`);
  if (typeof rule.name !== 'string' || rule.name.length === 0)
    throw new TypeError(`${at}.name must be a non-empty string, got ${describe(rule.name)}`);
  const per = rule.per ?? [];
  if (!Array.isArray(per) || per.some((d) => !DIMENSIONS.includes(d)))
    throw new TypeError(`${at}.per must list of ${DIMENSIONS.join(', ')}, got ${describe(per)}`);
  if (typeof rule.max !== 'number' || !Number.isFinite(rule.max) || rule.max < 0)
    throw new TypeError(`${at}.max must be a finite number >= 0, got ${describe(rule.max)}`);
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
  };
}

function spell(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const)
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

function refusalText(
  c: Compiled,
  s: LimitSubject,
  counter: LimitCounter,
  retryAfterMs: number | null,
  now: number,
): string {
  const per = c.per.length
    ? ` per ${c.per.map((d) => `${d} ${JSON.stringify((d === 'run' ? s.runId : d === 'agent' ? s.agent : s[d]) ?? '(none)')}`).join(', ')}`
    : '';
  const window = c.windowMs === null ? '' : ` per ${spell(c.windowMs)}`;
  const head =
    `The call to ${JSON.stringify(s.tool)} was refused by the limit ${JSON.stringify(c.rule.name)}: ` +
    `at most ${c.rule.max}${per}${window}; ${counter.used} used, this call costs ${counter.cost}.`;
  if (retryAfterMs === null)
    return c.windowMs === null || counter.cost > counter.max
      ? `${head} It cannot be retried${c.windowMs === null ? '' : ' within this limit'}; do not call it again.`
      : `${head} Try again later.`;
  const at = new Date(now + retryAfterMs).toISOString();
  return `${head} It may be retried after ${at} (in ${Math.ceil(retryAfterMs / 1000)} s); do not retry before then.`;
}
