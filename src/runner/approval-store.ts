/**
 * Where the runner keeps what must outlive one runner instance: remembered approval answers, used decision
 * nonces (so a decision cannot be replayed) and the ledger of executed calls (so resuming one state twice
 * never executes a tool twice).
 */
import type { ApprovalScope, BudgetCap } from './types.js';

/** A remembered answer. `mac` is the runner's HMAC over the key and answer; a record that fails it is ignored. */
export interface RememberedAnswer {
  readonly answer: 'allow' | 'deny';
  readonly scope: Exclude<ApprovalScope, 'once'>;
  readonly mac: string;
}

/** What a settled call produced (enough to answer the model again without running the tool again). */
export interface LedgerOutcome {
  readonly content: string;
  readonly isError: boolean;
}

/** A ledger entry: claimed (the call started; its outcome is unknown until settled) or settled. */
export type LedgerEntry =
  { readonly settled: false; readonly outcome?: never } | { readonly settled: true; readonly outcome: LedgerOutcome };

/** What a run has spent against its caps (model turns, tool calls attempted, cost). */
export interface RunSpend {
  readonly iterations: number;
  readonly attempts: number;
  readonly cost: number;
}

/** The answer of {@link ApprovalStore.spend}: charged, or the cap the charge would pass (nothing charged). */
export type SpendVerdict = { readonly ok: true } | { readonly ok: false; readonly cap: BudgetCap };

/**
 * The approvals store. Every method is asynchronous so a remote store fits; `consume` and `claim` must be
 * atomic (of two concurrent callers exactly one wins), which is what makes a double resume safe. A store
 * that throws makes the call it was asked about not run.
 */
export interface ApprovalStore {
  /** The answer remembered under `key`, if any. */
  recall(key: string): Promise<RememberedAnswer | undefined>;
  remember(key: string, answer: RememberedAnswer): Promise<void>;
  /** Marks a decision's nonce used; true the first time, false ever after. */
  consume(nonce: string): Promise<boolean>;
  /** The ledger entry of a call, if it was claimed. */
  entry(key: string): Promise<LedgerEntry | undefined>;
  /** Claims a call for execution: null when this caller now holds it, the existing entry otherwise. */
  claim(key: string): Promise<LedgerEntry | null>;
  /** Records the outcome of a claimed call. */
  settle(key: string, outcome: LedgerOutcome): Promise<void>;
  /**
   * Charges `add` to the run's tally unless that passes one of `caps`; atomic. The tally is first raised
   * to `floor` (what the run's signed state says it spent), so a store that never saw the run starts
   * from the state. Every continuation of a run charges the one tally here, which is why resuming one
   * paused state twice cannot spend its budget twice. A charge of a call (`attempts` > 0) is checked
   * against `maxToolCalls` and `maxCost`, a charge of a model turn (`iterations` > 0) against `maxIterations`.
   */
  spend(run: string, add: RunSpend, caps: RunCaps, floor: RunSpend): Promise<SpendVerdict>;
}

/** The caps a run's tally is held to. */
export interface RunCaps {
  readonly maxIterations: number;
  readonly maxToolCalls: number;
  readonly maxCost: number;
}

/** The tally after charging `add` to `stored` (raised to `floor`), or the cap it would pass. One rule for every store. */
export function charged(
  stored: RunSpend | undefined,
  add: RunSpend,
  caps: RunCaps,
  floor: RunSpend,
): { readonly total: RunSpend; readonly cap: BudgetCap | null } {
  const base: RunSpend = {
    iterations: Math.max(stored?.iterations ?? 0, floor.iterations),
    attempts: Math.max(stored?.attempts ?? 0, floor.attempts),
    cost: Math.max(stored?.cost ?? 0, floor.cost),
  };
  const next: RunSpend = {
    iterations: base.iterations + add.iterations,
    attempts: base.attempts + add.attempts,
    cost: base.cost + add.cost,
  };
  let cap: BudgetCap | null = null;
  if (add.iterations > 0 && next.iterations > caps.maxIterations) cap = 'maxIterations';
  else if (add.attempts > 0 && next.attempts > caps.maxToolCalls) cap = 'maxToolCalls';
  else if (add.attempts > 0 && next.cost > caps.maxCost) cap = 'maxCost';
  return { total: cap === null ? next : base, cap };
}

/**
 * The default store: in memory, for one process. Pass the same instance to a second runner to resume there;
 * use `SqliteApprovalStore` from `toolgate/sqlite` for processes that restart.
 */
export class InMemoryApprovalStore implements ApprovalStore {
  readonly #answers = new Map<string, RememberedAnswer>();
  readonly #nonces = new Set<string>();
  readonly #ledger = new Map<string, LedgerEntry>();
  readonly #tallies = new Map<string, RunSpend>();

  async recall(key: string): Promise<RememberedAnswer | undefined> {
    return this.#answers.get(key);
  }

  async remember(key: string, answer: RememberedAnswer): Promise<void> {
    this.#answers.set(key, Object.freeze({ answer: answer.answer, scope: answer.scope, mac: answer.mac }));
  }

  async consume(nonce: string): Promise<boolean> {
    if (this.#nonces.has(nonce)) return false;
    this.#nonces.add(nonce);
    return true;
  }

  async entry(key: string): Promise<LedgerEntry | undefined> {
    return this.#ledger.get(key);
  }

  async claim(key: string): Promise<LedgerEntry | null> {
    const existing = this.#ledger.get(key);
    if (existing) return existing;
    this.#ledger.set(key, { settled: false });
    return null;
  }

  async settle(key: string, outcome: LedgerOutcome): Promise<void> {
    this.#ledger.set(
      key,
      Object.freeze({ settled: true, outcome: Object.freeze({ content: outcome.content, isError: outcome.isError }) }),
    );
  }

  async spend(run: string, add: RunSpend, caps: RunCaps, floor: RunSpend): Promise<SpendVerdict> {
    const { total, cap } = charged(this.#tallies.get(run), add, caps, floor);
    this.#tallies.set(run, total);
    return cap === null ? { ok: true } : { ok: false, cap };
  }
}

export function isApprovalStore(value: unknown): value is ApprovalStore {
  if (typeof value !== 'object' || value === null) return false;
  const store = value as Record<string, unknown>;
  return ['recall', 'remember', 'consume', 'entry', 'claim', 'settle', 'spend'].every(
    (m) => typeof store[m] === 'function',
  );
}
