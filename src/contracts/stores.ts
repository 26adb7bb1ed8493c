/**
 * Every store interface, once: what the gate keeps that must outlive one process or be shared by many
 * workers. Decisions stay local and stateless; exactly these things are shared — stored approvals (with a
 * paused run's state), single-use nonces, remembered answers, the execution ledger, run tallies, counters
 * with windows, and the audit trail. TYPES ONLY.
 *
 * Every method may reject (a server is down, a row is unreadable). Whoever asked a store on a call's behalf
 * treats a rejection — or an answer of the wrong shape — as a refusal of that call: it does not run (fail
 * closed). The AgentRunner, the gateway and the inbox all take these interfaces (`memoryStores()` by
 * default); the implementations are `toolgate/stores` (memory), `toolgate/sqlite`, `toolgate/postgres`,
 * `toolgate/redis`.
 */
import type { Decision } from '../decision.js';
import type { Answer, ApprovalRecord, ApprovalStatus } from './approval.js';

// ── stored approvals ──

/** What {@link ApprovalStore.list} selects. */
export interface ApprovalFilter {
  readonly tenant?: string;
  readonly status?: ApprovalStatus;
}

/**
 * Stored approvals and their answers (PostgreSQL, SQLite, memory). `answer` is atomic across workers: the
 * first answer wins and every later one gets false, so two people clicking at once cannot both decide.
 */
export interface ApprovalStore {
  /** Stores a new request (its status should be `pending`); a second put with the same id keeps the first. */
  put(record: ApprovalRecord): Promise<void>;
  /** The request, with `status` computed now (a pending one past `expiresAt` reads as `expired`). */
  get(id: string): Promise<ApprovalRecord | undefined>;
  /** Requests, oldest first. */
  list(filter?: ApprovalFilter): Promise<ApprovalRecord[]>;
  /** Records the first answer of a pending, unexpired request: true; false for any later or late answer. */
  answer(id: string, answer: Answer): Promise<boolean>;
  /** Tells `listener` the id of every request put or answered (from any worker where the store can). Returns the unsubscribe. */
  watch?(listener: (id: string) => void): () => void;
}

// ── nonces and remembered answers ──

/** Single-use nonces: `consume` answers true the first time only, in every worker. */
export interface NonceStore {
  /** True the first time `nonce` is consumed; false ever after (for at least `ttlMs`). */
  consume(nonce: string, ttlMs: number): Promise<boolean>;
}

/** A remembered answer. `mac` is its writer's HMAC over key and answer; a reader that cannot verify it ignores it. */
export interface RememberedAnswer {
  readonly answer: 'allow' | 'deny';
  readonly scope: 'run' | 'session';
  readonly mac: string;
  readonly approver?: string;
}

/** Answers remembered for a run or a session. */
export interface RememberStore {
  recall(key: string): Promise<RememberedAnswer | undefined>;
  /** Stores (or replaces) the answer under `key`; forgotten after `ttlMs` when given. */
  remember(key: string, answer: RememberedAnswer, ttlMs?: number): Promise<void>;
}

// ── the execution ledger ──

/** What a recorded call produced: enough to answer the model again without running the tool again. */
export interface LedgerOutcome {
  readonly content: string;
  readonly isError: boolean;
}

/**
 * What {@link Ledger.reserve} found.
 * - `reserved`: this owner now holds the call: execute it, then `record`.
 * - `settled`: it ran before; here is what it produced. Do not run it.
 * - `held`: another owner reserved it and its lease runs until `until`: it may be running now. Do not run it.
 * - `unknown`: it was reserved and never recorded, and the lease has passed — its worker most likely died
 *   between reservation and record. Whether it ran is unknown; it is NEVER run again (an operator settles it).
 */
export type LedgerReservation =
  | { readonly state: 'reserved' }
  | { readonly state: 'settled'; readonly outcome: LedgerOutcome }
  | { readonly state: 'held'; readonly owner: string; readonly until: number }
  | { readonly state: 'unknown'; readonly owner: string; readonly since: number };

/** A ledger row as it stands (see {@link Ledger.inspect}). */
export interface LedgerEntry {
  readonly key: string;
  readonly owner: string;
  /** Epoch ms (the store's clock). */
  readonly reservedAt: number;
  readonly leaseUntil: number;
  readonly outcome: LedgerOutcome | null;
  readonly recordedAt: number | null;
  /** Set when an operator settled an `unknown` row ({@link Ledger.settle}); absent otherwise. */
  readonly settlement?: LedgerSettlementRecord;
}

/**
 * The execution ledger: reserve → execute → record, exactly once across workers. A reservation is never
 * handed out twice for one key, so of any number of workers resuming the same call at once exactly one runs it.
 */
export interface Ledger {
  /** Reserves `key` for `owner` for `leaseMs`, or says why not (see {@link LedgerReservation}). */
  reserve(key: string, owner: string, leaseMs: number): Promise<LedgerReservation>;
  /**
   * Records the outcome of a call `owner` reserved (also after its lease passed: the real outcome replaces
   * "unknown"). False when `owner` does not hold `key` or it is already recorded.
   */
  record(key: string, owner: string, outcome: LedgerOutcome): Promise<boolean>;
  /**
   * Gives back a reservation `owner` holds and never recorded, for a call that did NOT start (a check after
   * the reservation failed: the approval's nonce could not be consumed). The key can be reserved again.
   * False when `owner` does not hold `key` or it is recorded. Never call it once the call may have started.
   */
  release(key: string, owner: string): Promise<boolean>;
  /** The row of `key`, for operators and tests. */
  inspect(key: string): Promise<LedgerEntry | undefined>;
  /** Rows for operators (`toolgate ledger list`), oldest reservation first: the `unknown` ones to settle. */
  list(query?: LedgerQuery): Promise<LedgerEntry[]>;
  /**
   * An operator's verdict on a row that reads as `unknown` (reserved, never recorded, lease passed): whether
   * the call ran, and who says so. Recorded as the row's outcome (so the call is answered from it, and still
   * never run again) with the settlement beside it. True when the row was unknown and is now settled; false
   * when it is absent, recorded, or still held (its worker may be running it).
   */
  settle(key: string, settlement: LedgerSettlement): Promise<boolean>;
}

/** What {@link Ledger.list} selects; every field narrows. */
export interface LedgerQuery {
  /** Only rows that read as `unknown` now (the store's clock): reserved, never recorded, lease passed. */
  readonly unknown?: boolean;
  /** Only rows reserved at or after this time: ISO 8601 or epoch ms. */
  readonly since?: string | number;
  /** At most this many (the oldest first). @default 1000 */
  readonly limit?: number;
}

/** An operator's verdict on an `unknown` ledger row (see {@link Ledger.settle}). */
export interface LedgerSettlement {
  /** `ran`: the call's effect happened; `not-run`: it did not. */
  readonly outcome: 'ran' | 'not-run';
  /** Who settles it (a name, recorded with the row). */
  readonly by: string;
  /** Why, or what was checked (recorded). */
  readonly note?: string;
}

/** How a row was settled by an operator, as {@link LedgerEntry.settlement} reads it back. */
export interface LedgerSettlementRecord extends LedgerSettlement {
  /** Epoch ms (the store's clock). */
  readonly at: number;
}

// ── run tallies ──

/** What a run has spent against its caps (model turns, tool calls attempted, cost). */
export interface RunSpend {
  readonly iterations: number;
  readonly attempts: number;
  readonly cost: number;
}

/** The caps a run's tally is held to. */
export interface RunCaps {
  readonly maxIterations: number;
  readonly maxToolCalls: number;
  readonly maxCost: number;
}

/** The cap a `budget_exceeded` run hit. */
export type BudgetCap = 'maxIterations' | 'maxToolCalls' | 'maxCost';

/** The answer of {@link TallyStore.spend}: charged, or the cap the charge would pass (nothing charged). */
export type SpendVerdict = { readonly ok: true } | { readonly ok: false; readonly cap: BudgetCap };

/**
 * A run's spend against its caps (the runner's budget), shared by every continuation of the run: `spend` is
 * atomic, raises the tally to `floor` (what the run's signed state says) first, and charges nothing when a
 * cap would be passed — so resuming one paused state on two workers cannot spend its budget twice.
 */
export interface TallyStore {
  spend(run: string, add: RunSpend, caps: RunCaps, floor: RunSpend): Promise<SpendVerdict>;
}

// ── counters ──

/** One counter to charge: `cost` against `limit` over the last `windowMs`. */
export interface CounterCharge {
  readonly key: string;
  readonly cost: number;
  readonly limit: number;
  readonly windowMs: number;
}

/**
 * What {@link CounterStore.consume} decided for a set of charges: all of them, or none. `used` is each
 * counter's total after the decision; on a refusal, `index` is the first charge that did not fit. Only
 * `allowed === true` allows: any other answer is a store error (the call is refused at stage `store`).
 */
export type CounterVerdict =
  | { readonly allowed: true; readonly used: readonly number[] }
  | {
      readonly allowed: false;
      readonly used: readonly number[];
      readonly index: number;
      /** When enough of that window has passed for the charge to fit; null: never (its cost exceeds its limit). */
      readonly retryAfterMs: number | null;
    };

/**
 * Counters over sliding windows (Redis Lua, PostgreSQL, SQLite transactions, memory). `consume` is atomic and
 * all-or-nothing: it adds every charge only when each counter stays within its limit, so an attempt refused
 * by one limit spends no slot of any, and of N workers racing for the last slot exactly one gets it.
 */
export interface CounterStore {
  /**
   * Names the store where a refusal at stage `store` says which store failed (`redis 127.0.0.1:6379 prefix
   * "shop"`, `postgres schema "toolgate"`); never a credential. @default 'the counter store'
   */
  readonly name?: string;
  consume(charges: readonly CounterCharge[]): Promise<CounterVerdict>;
  /** The total of a window now, without consuming (for `explain`). */
  peek(key: string, windowMs: number): Promise<number>;
}

// ── audit ──

/** One audit record: a call's Decision, who asked, by which route, and how the call ended. */
export interface AuditRecord {
  /** ISO 8601. */
  readonly time: string;
  readonly route: string;
  /** The caller's id (a token subject, a user), or null. */
  readonly caller: string | null;
  /** A gateway session, or null. */
  readonly session: string | null;
  readonly decision: Decision;
  /** `ok`/`error`: it ran; `refused`: it did not; null: not known to the writer. */
  readonly status: 'ok' | 'error' | 'refused' | null;
}

/** Receives every Decision. A sink that throws or rejects is reported, never allowed to change a decision. */
export interface AuditSink {
  write(record: AuditRecord): void | Promise<void>;
}

/** What `toolgate audit` and {@link AuditReader.query} select; every field narrows. */
export interface AuditQuery {
  readonly tenant?: string;
  readonly caller?: string;
  /** The canonical tool name. */
  readonly tool?: string;
  readonly effect?: 'allow' | 'deny';
  /** ISO 8601 or epoch ms; inclusive. */
  readonly since?: string | number;
  /** ISO 8601 or epoch ms; exclusive. */
  readonly until?: string | number;
  /** At most this many records, newest last. @default 1000 */
  readonly limit?: number;
}

/** An audit trail that can be searched. */
export interface AuditReader {
  query(query: AuditQuery): Promise<AuditRecord[]>;
}

// ── the set a deployment passes around ──

/**
 * The stores one deployment shares, as the runner, the gateway and the inbox take them. Each member may come
 * from another server (the README's split: ledger, remembered answers and tallies on PostgreSQL, nonces and
 * counters on Redis); `memoryStores()` gives all of them for one process.
 */
export interface Stores {
  readonly approvals: ApprovalStore;
  readonly nonces: NonceStore;
  readonly remembered: RememberStore;
  readonly ledger: Ledger;
  readonly tallies: TallyStore;
  readonly counters: CounterStore;
}
