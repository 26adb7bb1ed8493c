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
import { describe, displaySafe } from '../names.js';
import type { CounterCharge, CounterStore, CounterVerdict } from '../contracts/stores.js';
import { compileLimits, type Compiled, type LimitRule } from './rules.js';

// The limits as written and compiled live in rules.ts; importers keep reaching them here.
export { compileLimits, parseWindow } from './rules.js';
export type { Compiled, LimitDimension, LimitRule, PlanMax } from './rules.js';

/**
 * What one tenant's plan says about limits (a policy file's `tenants.<id>.plan` and `.limits`): "1,000 a day
 * on the pro plan, 10 on the free plan" as `{ plan: { refunds_per_day: 1000 } }` for one tenant and
 * `{ plan: { refunds_per_day: 10 } }` for another, under one limit with `max: { plan: 'refunds_per_day' }`.
 */
export interface TenantLimitPlan {
  /** Named values a limit's `max: { plan: name }` reads. */
  readonly plan?: Readonly<Record<string, number>>;
  /** This tenant's max of a limit, by the limit's name, over the limit's own `max`. */
  readonly limits?: Readonly<Record<string, number>>;
}

/**
 * The tenants' plans: by tenant id, or a function of the tenant id (read at every charge: a plan changed in
 * your database applies at the next call). A function that throws or rejects refuses the call.
 */
export type TenantPlans =
  | Readonly<Record<string, TenantLimitPlan>>
  | ((tenant: string) => TenantLimitPlan | undefined | Promise<TenantLimitPlan | undefined>);

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
  /** The max for this call's tenant; null (`explain` only): the tenant's plan gives none, so the call is refused. */
  readonly max: number | null;
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
  /** The tenants' plans, for limits whose `max` is `{ plan }` and per-tenant maxes. @default none */
  readonly tenants?: TenantPlans;
}

/** How long a windowless counter is kept. */
const NO_WINDOW_MS = 30 * 86_400_000;

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
  readonly #tenants: TenantPlans | null;
  /** Each limit's key up to its dimensions' values. */
  readonly #heads = new Map<Compiled, string>();

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
    const tenants = options.tenants;
    if (tenants === undefined) this.#tenants = null;
    else if (typeof tenants === 'function') this.#tenants = tenants;
    else if (typeof tenants === 'object' && tenants !== null) {
      for (const [id, plan] of Object.entries(tenants)) checkPlan(plan, `Limiter option "tenants" ${describe(id)}`);
      this.#tenants = tenants;
    } else throw new TypeError(`Limiter option "tenants" must be an object or a function, got ${describe(tenants)}`);
  }

  /**
   * The counters of the limits that select this call, with their keys and costs (nothing is read or charged).
   * `limit` is each one's max for a tenant with `plan` (none given: the limit's own max; a plan max without
   * a value and a default reads as 0).
   */
  applicable(subject: LimitSubject, plan?: TenantLimitPlan): CounterCharge[] {
    return this.#select(subject).map((c) => this.#chargeOf(c, subject, maxOf(c, plan) ?? 0));
  }

  /**
   * Charges one attempt against every limit that selects it, all or none. A refused verdict spent nothing.
   * A store that fails, or answers garbage, gives a refusal at stage `store` (fail closed).
   */
  async charge(subject: LimitSubject): Promise<LimitVerdict> {
    const matched = this.#select(subject);
    if (matched.length === 0) return { allowed: true, charged: [] };
    let plan: TenantLimitPlan | undefined;
    if (this.#tenants !== null && subject.tenant !== null) {
      try {
        const read = this.#planOf(subject.tenant);
        plan = read instanceof Promise ? await read : read;
      } catch (error) {
        return this.#storeFailed(
          `failed: ${error instanceof Error ? error.message : String(error)}`,
          'the tenant plans (Limiter option "tenants")',
        );
      }
    }
    const charges: CounterCharge[] = [];
    for (const c of matched) {
      const max = maxOf(c, plan);
      if (max === null) return planRefusal(c, subject, plan);
      charges.push(this.#chargeOf(c, subject, max));
    }
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
    // No function made per call: the charged counters in a loop.
    if (verdict.allowed) {
      const charged: LimitCounter[] = [];
      for (let i = 0; i < charges.length; i++) charged.push(counterOf(matched[i]!, charges[i]!, verdict.used[i]!));
      return { allowed: true, charged };
    }
    const i = verdict.index;
    const c = matched[i]!;
    const counter = counterOf(c, charges[i]!, verdict.used[i]!);
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

  /** The counters of every limit that selects this call, read now, with the tenant's maxes (for `explain`). */
  async explain(subject: LimitSubject): Promise<LimitCounter[]> {
    const matched = this.#select(subject);
    const plan = this.#tenants !== null && subject.tenant !== null ? await this.#planOf(subject.tenant) : undefined;
    return Promise.all(
      matched.map(async (c) => {
        const max = maxOf(c, plan);
        const charge = this.#chargeOf(c, subject, max ?? 0);
        return {
          limit: c.rule.name,
          key: charge.key,
          used: await this.#counters.peek(charge.key, charge.windowMs),
          max,
          cost: charge.cost,
          windowMs: c.windowMs,
        };
      }),
    );
  }

  #select(subject: LimitSubject): Compiled[] {
    const out: Compiled[] = [];
    for (const c of this.#compiled) if (selects(c, subject)) out.push(c);
    return out;
  }

  #chargeOf(c: Compiled, subject: LimitSubject, max: number): CounterCharge {
    return {
      key: this.#key(c, subject),
      cost: c.costs.get(subject.tool) ?? c.cost,
      limit: max,
      windowMs: c.windowMs ?? NO_WINDOW_MS,
    };
  }

  #planOf(tenant: string): TenantLimitPlan | undefined | Promise<TenantLimitPlan | undefined> {
    const tenants = this.#tenants!;
    if (typeof tenants !== 'function') return Object.hasOwn(tenants, tenant) ? tenants[tenant] : undefined;
    const where = `the plan of tenant ${describe(tenant)}`;
    // Always through a Promise of this realm: a thenable that is not one (a query builder, another library's or
    // realm's promise) is awaited, never checked as the plan itself (which read as an empty plan: limits ignored).
    return Promise.resolve(tenants(tenant)).then((plan) => (plan === undefined ? plan : checkPlan(plan, where)));
  }

  #storeFailed(what: string, store = this.#storeName): LimitVerdict {
    return {
      allowed: false,
      stage: 'store',
      store,
      counter: null,
      retryAfterMs: null,
      reason:
        `The call was not run: its limits could not be checked, because ${store === this.#storeName ? `the counter store (${store})` : store} ${what}. ` +
        'No limit was found full; the call may be tried again once the store answers.',
    };
  }

  /**
   * `prefix:name:dimension=value…` (the limit's name and the values URI-encoded). No value (null) is nothing
   * after `=`, as ever; the empty id `""` is `=""` (two quotes, which URI-encoding never gives: `%22`), so a
   * party whose id is "" never shares the budget of calls with none. Every other key is as it was (counters
   * in Redis or PostgreSQL carry over an upgrade).
   */
  #key(c: Compiled, s: LimitSubject): string {
    let key = this.#heads.get(c);
    if (key === undefined) this.#heads.set(c, (key = `${this.#prefix}:${encodeURIComponent(c.rule.name)}`));
    for (const d of c.per) {
      const v = d === 'tenant' ? s.tenant : d === 'caller' ? s.caller : d === 'agent' ? s.agent : s.runId;
      key += `:${d}=${v === null ? '' : v === '' ? '""' : encodeURIComponent(v)}`;
    }
    return key;
  }
}

/** Limit `c`'s counter as charged by `charge`, at `used`. */
function counterOf(c: Compiled, charge: CounterCharge, used: number): LimitCounter {
  return { limit: c.rule.name, key: charge.key, used, max: charge.limit, cost: charge.cost, windowMs: c.windowMs };
}

/** A limit's max for a tenant with `plan`: its `limits` entry, else the limit's own max or plan value; null: none. */
function maxOf(c: Compiled, plan: TenantLimitPlan | undefined): number | null {
  const limits = plan?.limits;
  if (limits !== undefined && Object.hasOwn(limits, c.rule.name)) return limits[c.rule.name]!;
  if (c.max !== null) return c.max;
  const values = plan?.plan;
  const key = c.planMax!.plan;
  if (values !== undefined && Object.hasOwn(values, key)) return values[key]!;
  return c.planMax!.default ?? null;
}

/** Checks one tenant's plan (numbers >= 0 by name), throwing a TypeError naming `where`; returns it. */
function checkPlan(plan: unknown, where: string): TenantLimitPlan {
  if (typeof plan !== 'object' || plan === null)
    throw new TypeError(`${where} must be an object, got ${describe(plan)}`);
  for (const field of ['plan', 'limits'] as const) {
    const values: unknown = (plan as Record<string, unknown>)[field];
    if (values === undefined) continue;
    if (typeof values !== 'object' || values === null || Array.isArray(values))
      throw new TypeError(`${where} "${field}" must be an object of numbers, got ${describe(values)}`);
    for (const [name, value] of Object.entries(values))
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
        throw new TypeError(`${where} "${field}.${name}" must be a finite number >= 0, got ${describe(value)}`);
  }
  return plan as TenantLimitPlan;
}

/** The refusal of a call whose limit takes its max from a plan that gives none. */
function planRefusal(c: Compiled, s: LimitSubject, plan: TenantLimitPlan | undefined): LimitVerdict {
  const key = c.planMax!.plan;
  const whose =
    s.tenant === null
      ? 'the call names no tenant'
      : plan === undefined
        ? `tenant ${JSON.stringify(s.tenant)} has no plan`
        : `the plan of tenant ${JSON.stringify(s.tenant)} has no value ${JSON.stringify(key)}`;
  return {
    allowed: false,
    stage: 'limit',
    limit: c.rule.name,
    counter: null,
    retryAfterMs: null,
    reason:
      `The call to ${JSON.stringify(s.tool)} was refused by the limit ${JSON.stringify(c.rule.name)}: its max is ` +
      `the tenant's plan value ${JSON.stringify(key)}, and ${whose} (the limit sets no default). ` +
      'It cannot be retried until the plan gives one; do not call it again.',
  };
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
  if (!Array.isArray(used)) return `"used" is ${describe(used)}, not a list of numbers`;
  // Every slot a finite number (a hole is not one).
  for (let i = 0; i < used.length; i++) {
    const u: unknown = used[i];
    if (typeof u !== 'number' || !Number.isFinite(u)) return `"used" is ${describe(used)}, not a list of numbers`;
  }
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
  // The max this tenant has (a plan's value, or its own override), as charged.
  const max = counter.max ?? 0;
  const head =
    `The call to ${JSON.stringify(s.tool)} was refused by the limit ${JSON.stringify(c.rule.name)}: ` +
    `at most ${max}${per}${window}; ${counter.used} used, this call costs ${counter.cost}.`;
  if (retryAfterMs === null)
    return c.windowMs === null || counter.cost > max
      ? `${head} It cannot be retried${c.windowMs === null ? '' : ' within this limit'}; do not call it again.`
      : `${head} Try again later.`;
  const at = new Date(now + retryAfterMs).toISOString();
  return `${head} It may be retried after ${at} (in ${Math.ceil(retryAfterMs / 1000)} s); do not retry before then.`;
}
