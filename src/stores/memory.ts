/**
 * The default stores: in memory, for one process. Every operation completes within one synchronous step
 * (no await between the check and the write), which is what makes `answer`, `consume`, `reserve` atomic
 * here. Share one instance between the runners and gates of a process; use `toolgate/sqlite` for one
 * machine whose processes restart, `toolgate/postgres` + `toolgate/redis` for many workers.
 *
 * Each Map is keyed by its key's safeKey (src/crypto.ts): a ledger key holds the caller's run id, a counter's the
 * tenant's, caller's and run's ids, and V8 hashes a string past 16,383 characters by its length alone (a run of 2,000
 * calls under a run id of 16,400 characters compared each ledger key with all the others).
 */
import {
  auditBounds,
  checkAnswer,
  checkCharges,
  checkPending,
  lastMatching,
  ledgerQueryOf,
  outcomeRow,
  rememberedRow,
  requireKey,
  requireNumber,
  charged,
  reservationOf,
  retryAfter,
  settledOutcome,
  statusAt,
} from './shared.js';
import { safeKey } from '../crypto.js';
import type {
  Answer,
  ApprovalStore,
  AuditQuery,
  AuditReader,
  AuditRecord,
  AuditSink,
  CounterCharge,
  CounterStore,
  CounterVerdict,
  Ledger,
  LedgerEntry,
  LedgerOutcome,
  LedgerQuery,
  LedgerReservation,
  LedgerSettlement,
  NonceStore,
  PendingFilter,
  PendingRecord,
  RememberStore,
  RememberedAnswer,
  TallyStore,
  RunCaps,
  RunSpend,
  SpendVerdict,
} from './types.js';

/** Options of the in-memory stores. */
export interface MemoryStoreOptions {
  /** The clock, epoch ms (tests move it). @default Date.now */
  readonly now?: () => number;
}

function clockOf(options: MemoryStoreOptions | undefined): () => number {
  const now = options?.now ?? Date.now;
  if (typeof now !== 'function') throw new TypeError('option "now" must be a function returning epoch ms');
  return now;
}

/** Pending approvals in a Map; `watch` hears this process's puts and answers. */
export class MemoryApprovalStore implements ApprovalStore {
  readonly #records = new Map<string, PendingRecord>();
  readonly #listeners = new Set<(id: string) => void>();
  readonly #now: () => number;

  constructor(options?: MemoryStoreOptions) {
    this.#now = clockOf(options);
  }

  async put(pending: PendingRecord): Promise<void> {
    checkPending(pending);
    const key = safeKey(pending.id);
    if (this.#records.has(key)) return;
    this.#records.set(key, Object.freeze({ ...pending }));
    this.#tell(pending.id);
  }

  async get(id: string): Promise<PendingRecord | undefined> {
    const record = this.#records.get(safeKey(id));
    return record && this.#current(record);
  }

  async list(filter: PendingFilter = {}): Promise<PendingRecord[]> {
    const out: PendingRecord[] = [];
    for (const stored of this.#records.values()) {
      const record = this.#current(stored);
      if (filter.tenant !== undefined && record.tenant !== filter.tenant) continue;
      if (filter.status !== undefined && record.status !== filter.status) continue;
      out.push(record);
    }
    return out.sort((a, b) => a.createdAt - b.createdAt);
  }

  async answer(id: string, answer: Answer): Promise<boolean> {
    checkAnswer(answer);
    const key = safeKey(id);
    const record = this.#records.get(key);
    const now = this.#now();
    if (!record || statusAt(record.status, record.expiresAt, now) !== 'pending') return false;
    this.#records.set(
      key,
      Object.freeze({ ...record, status: 'answered', answer: Object.freeze({ ...answer }), answeredAt: now }),
    );
    this.#tell(id);
    return true;
  }

  watch(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #current(record: PendingRecord): PendingRecord {
    const status = statusAt(record.status, record.expiresAt, this.#now());
    return status === record.status ? record : Object.freeze({ ...record, status });
  }

  #tell(id: string): void {
    for (const listener of this.#listeners) {
      try {
        listener(id);
      } catch {
        // A listener's failure is its own; the store's state is already written.
      }
    }
  }
}

/** Used nonces in a Map with their expiry (expired ones are dropped as they are met). */
export class MemoryNonceStore implements NonceStore {
  readonly #used = new Map<string, number>();
  readonly #now: () => number;

  constructor(options?: MemoryStoreOptions) {
    this.#now = clockOf(options);
  }

  async consume(nonce: string, ttlMs: number): Promise<boolean> {
    requireKey(nonce, 'nonce');
    requireNumber(ttlMs, 'ttlMs');
    const now = this.#now();
    const key = safeKey(nonce);
    const until = this.#used.get(key);
    if (until !== undefined && until > now) return false;
    this.#used.set(key, now + Math.max(ttlMs, 1));
    if (this.#used.size % 1024 === 0) for (const [n, t] of this.#used) if (t <= now) this.#used.delete(n);
    return true;
  }
}

/** Remembered answers in a Map. */
export class MemoryRememberStore implements RememberStore {
  readonly #answers = new Map<string, { readonly answer: RememberedAnswer; readonly until: number }>();
  readonly #now: () => number;

  constructor(options?: MemoryStoreOptions) {
    this.#now = clockOf(options);
  }

  async recall(key: string): Promise<RememberedAnswer | undefined> {
    const at = safeKey(key);
    const row = this.#answers.get(at);
    if (!row) return undefined;
    if (row.until <= this.#now()) {
      this.#answers.delete(at);
      return undefined;
    }
    return row.answer;
  }

  async remember(key: string, answer: RememberedAnswer, ttlMs?: number): Promise<void> {
    requireKey(key, 'key');
    if (ttlMs !== undefined) requireNumber(ttlMs, 'ttlMs');
    this.#answers.set(safeKey(key), {
      answer: rememberedRow(answer),
      until: ttlMs === undefined ? Infinity : this.#now() + ttlMs,
    });
  }
}

/** The ledger in a Map. */
export class MemoryLedger implements Ledger {
  readonly #rows = new Map<string, LedgerEntry>();
  readonly #now: () => number;

  constructor(options?: MemoryStoreOptions) {
    this.#now = clockOf(options);
  }

  async reserve(key: string, owner: string, leaseMs: number): Promise<LedgerReservation> {
    requireKey(key, 'key');
    requireKey(owner, 'owner');
    requireNumber(leaseMs, 'leaseMs');
    const now = this.#now();
    const at = safeKey(key);
    const row = this.#rows.get(at);
    if (!row) {
      this.#rows.set(
        at,
        Object.freeze({ key, owner, reservedAt: now, leaseUntil: now + leaseMs, outcome: null, recordedAt: null }),
      );
      return { state: 'reserved' };
    }
    return reservationOf(row, now);
  }

  async record(key: string, owner: string, outcome: LedgerOutcome): Promise<boolean> {
    const value = outcomeRow(outcome);
    const at = safeKey(key);
    const row = this.#rows.get(at);
    if (!row || row.owner !== owner || row.outcome !== null) return false;
    // Field by field, not a spread of the frozen row (a row not recorded yet has no settlement).
    const { reservedAt, leaseUntil } = row;
    this.#rows.set(
      at,
      Object.freeze({
        key: row.key,
        owner: row.owner,
        reservedAt,
        leaseUntil,
        outcome: value,
        recordedAt: this.#now(),
      }),
    );
    return true;
  }

  async release(key: string, owner: string): Promise<boolean> {
    const at = safeKey(key);
    const row = this.#rows.get(at);
    if (!row || row.owner !== owner || row.recordedAt !== null) return false;
    this.#rows.delete(at);
    return true;
  }

  async inspect(key: string): Promise<LedgerEntry | undefined> {
    return this.#rows.get(safeKey(key));
  }

  async list(query?: LedgerQuery): Promise<LedgerEntry[]> {
    const q = ledgerQueryOf(query);
    const now = this.#now();
    const out: LedgerEntry[] = [];
    for (const row of this.#rows.values()) {
      if (q.unknown && (row.recordedAt !== null || now < row.leaseUntil)) continue;
      if (q.since !== undefined && row.reservedAt < q.since) continue;
      out.push(row);
    }
    return out.sort((a, b) => a.reservedAt - b.reservedAt || (a.key < b.key ? -1 : 1)).slice(0, q.limit);
  }

  async settle(key: string, settlement: LedgerSettlement): Promise<boolean> {
    const { settlement: verdict, ...outcome } = settledOutcome(settlement);
    requireKey(key, 'key');
    const at = safeKey(key);
    const row = this.#rows.get(at);
    const now = this.#now();
    if (!row || row.recordedAt !== null || now < row.leaseUntil) return false;
    this.#rows.set(
      at,
      Object.freeze({
        ...row,
        outcome: Object.freeze(outcome),
        recordedAt: now,
        settlement: Object.freeze({ ...verdict, at: now }),
      }),
    );
    return true;
  }
}

/** Run tallies in a Map. */
export class MemoryTallyStore implements TallyStore {
  readonly #tallies = new Map<string, RunSpend>();

  async spend(run: string, add: RunSpend, caps: RunCaps, floor: RunSpend): Promise<SpendVerdict> {
    requireKey(run, 'run');
    const at = safeKey(run);
    const { total, cap } = charged(this.#tallies.get(at), add, caps, floor);
    this.#tallies.set(at, total);
    return cap === null ? { ok: true } : { ok: false, cap };
  }
}

/** One counter's sliding-window log. */
interface Window {
  readonly entries: { at: number; cost: number }[];
  total: number;
  /** The longest window the key was charged or read under (what the sweep keeps it for). */
  longest: number;
  /**
   * The latest time of an entry it was given: what the sweep keeps it by. Not the last entry's: after the clock
   * steps back, the entry pushed last is not the newest, and a counter still counting was deleted (a limit let
   * more calls through than its max).
   */
  newest: number;
}

/** How long past its longest window an idle counter is kept (as the Redis store's key TTL: at most a minute). */
const SWEEP_SLACK_MS = 60_000;
/** Counters the sweep looks at per `consume`: memory follows the live keys, at O(1) per call. */
const SWEEP_PER_CALL = 2;

function undo(w: Window, cost: number): void {
  if (cost <= 0) return;
  w.entries.pop();
  w.total -= cost;
}

/**
 * Sliding-window counters in a Map. Memory follows the live keys: a counter left empty by a call is deleted
 * (an empty window and none read alike), and a sweep of a few counters per `consume` deletes those idle past
 * their longest window and a minute (as the Redis store's keys expire), so keys met once do not pile up.
 */
export class MemoryCounterStore implements CounterStore {
  readonly name = 'memory (this process)';
  readonly #windows = new Map<string, Window>();
  readonly #now: () => number;
  #sweep: Iterator<[string, Window]> | null = null;

  constructor(options?: MemoryStoreOptions) {
    this.#now = clockOf(options);
  }

  /** How many counters are held (memory grows with the live keys only). */
  get size(): number {
    return this.#windows.size;
  }

  async consume(charges: readonly CounterCharge[]): Promise<CounterVerdict> {
    checkCharges(charges);
    const now = this.#now();
    this.#sweepSome(now);
    const keys = charges.map((c) => safeKey(c.key));
    const windows = charges.map((c, i) => this.#window(keys[i]!, c.windowMs, now, true)!);
    try {
      for (const [i, c] of charges.entries()) {
        const w = windows[i]!;
        if (w.total + c.cost > c.limit) {
          const retry = retryAfter(w.entries, w.total + c.cost - c.limit, c.windowMs, now, c.cost, c.limit);
          return { allowed: false, used: windows.map((x) => x.total), index: i, retryAfterMs: retry };
        }
      }
      // Two charges on one key (two rules counting the same thing) must fit together: checked as they are added.
      for (const [i, c] of charges.entries()) {
        const w = windows[i]!;
        if (w.total + c.cost > c.limit) {
          for (let j = i - 1; j >= 0; j--) undo(windows[j]!, charges[j]!.cost);
          return { allowed: false, used: windows.map((x) => x.total), index: i, retryAfterMs: null };
        }
        if (c.cost > 0) {
          w.entries.push({ at: now, cost: c.cost });
          w.total += c.cost;
          if (now > w.newest) w.newest = now;
        }
      }
      return { allowed: true, used: windows.map((w) => w.total) };
    } finally {
      for (const [i, w] of windows.entries()) if (w.entries.length === 0) this.#windows.delete(keys[i]!);
    }
  }

  async peek(key: string, windowMs: number): Promise<number> {
    requireKey(key, 'key');
    requireNumber(windowMs, 'windowMs', 1);
    const at = safeKey(key);
    const w = this.#window(at, windowMs, this.#now(), false);
    if (w?.entries.length === 0) this.#windows.delete(at);
    return w?.total ?? 0;
  }

  /** The counter of `key` (a charge's safeKey) with what has left `windowMs` dropped; a new one only when `create`. */
  #window(key: string, windowMs: number, now: number, create: boolean): Window | undefined {
    let w = this.#windows.get(key);
    if (!w) {
      if (!create) return undefined;
      this.#windows.set(key, (w = { entries: [], total: 0, longest: windowMs, newest: -Infinity }));
    } else if (windowMs > w.longest) w.longest = windowMs;
    let drop = 0;
    while (drop < w.entries.length && w.entries[drop]!.at <= now - windowMs) w.total -= w.entries[drop++]!.cost;
    if (drop > 0) w.entries.splice(0, drop);
    return w;
  }

  /** Deletes the next few counters whose newest entry (in time) is past their longest window and a minute. */
  #sweepSome(now: number): void {
    for (let i = 0; i < SWEEP_PER_CALL; i++) {
      this.#sweep ??= this.#windows.entries();
      const next = this.#sweep.next();
      if (next.done === true) {
        this.#sweep = null;
        return;
      }
      const [key, w] = next.value;
      if (w.entries.length === 0 || w.newest <= now - w.longest - Math.min(w.longest, SWEEP_SLACK_MS))
        this.#windows.delete(key);
    }
  }
}

/** An audit trail in an array (tests, the demo, `explain`). */
export class MemoryAuditSink implements AuditSink, AuditReader {
  readonly records: AuditRecord[] = [];

  write(record: AuditRecord): void {
    this.records.push(record);
  }

  async query(query?: AuditQuery): Promise<AuditRecord[]> {
    return lastMatching(this.records, auditBounds(query));
  }
}

/**
 * Every in-memory store of one process, sharing one clock: what the AgentRunner, the gateway and the inbox
 * take by default. Pass the same instance to the runners (and the inbox) of a process so a run paused by one
 * resumes on another. (`InMemoryApprovalStore` in `toolgate/runner` is this class under its 0.1 name.)
 *
 * @example
 * const stores = memoryStores();
 * const limiter = new Limiter({ counters: stores.counters, limits: [{ name: 'refunds', per: ['caller'], tools: ['refund'], max: 5, window: '1h' }] });
 */
export class MemoryStores {
  readonly approvals: MemoryApprovalStore;
  readonly nonces: MemoryNonceStore;
  readonly remembered: MemoryRememberStore;
  readonly ledger: MemoryLedger;
  readonly counters: MemoryCounterStore;
  readonly tallies: MemoryTallyStore;
  readonly audit: MemoryAuditSink;

  constructor(options?: MemoryStoreOptions) {
    this.approvals = new MemoryApprovalStore(options);
    this.nonces = new MemoryNonceStore(options);
    this.remembered = new MemoryRememberStore(options);
    this.ledger = new MemoryLedger(options);
    this.counters = new MemoryCounterStore(options);
    this.tallies = new MemoryTallyStore();
    this.audit = new MemoryAuditSink();
  }
}

/** The default stores of one process: `new MemoryStores(options)`. */
export function memoryStores(options?: MemoryStoreOptions): MemoryStores {
  return new MemoryStores(options);
}
