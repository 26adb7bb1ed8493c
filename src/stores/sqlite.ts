/**
 * `toolgate/sqlite`: every store in one embedded SQLite database (better-sqlite3, an optional peer; the root
 * entry never imports this file) — the default for one machine whose processes restart or run side by side.
 * Each check-and-write is one statement or one `BEGIN IMMEDIATE` transaction, which takes the database's
 * write lock before it reads, so two processes on one file (WAL mode) cannot both win.
 */
import Database from 'better-sqlite3';
import { parseJsonText } from '../json-text.js';
import { describe } from '../names.js';
import {
  auditBounds,
  checkAnswer,
  checkCharges,
  checkPending,
  ledgerEntryOf,
  ledgerQueryOf,
  outcomeRow,
  pendingOf,
  readRemembered,
  rememberedRow,
  requireIdentifier,
  requireKey,
  requireNumber,
  charged,
  reservationOf,
  retryAfter,
  settledOutcome,
} from './shared.js';
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

/** Options of {@link SqliteStores} (`SqliteApprovalStoreOptions` is its 0.1 name). */
export interface SqliteStoresOptions {
  /** The database file (created if missing), or ':memory:'. Ignored when `database` is given. @default ':memory:' */
  readonly filename?: string;
  /** An open better-sqlite3 database to use instead (the stores do not close it). */
  readonly database?: Database.Database;
  /** Prefix of the tables. @default 'toolgate_' */
  readonly tablePrefix?: string;
  /** How long a process waits for another's write lock before the operation fails (closed). @default 5000 */
  readonly busyTimeoutMs?: number;
  /** The clock, epoch ms. @default Date.now */
  readonly now?: () => number;
}

interface Row {
  readonly [column: string]: unknown;
}

/**
 * Every store in one SQLite database: `approvals`, `nonces`, `remembered`, `ledger`, `counters`, `audit`.
 *
 * @example
 * import { SqliteStores } from 'toolgate/sqlite';
 * const stores = new SqliteStores({ filename: 'toolgate.db' });
 * const limiter = new Limiter({ counters: stores.counters, limits });
 */
export class SqliteStores {
  readonly approvals: ApprovalStore;
  readonly nonces: NonceStore;
  readonly remembered: RememberStore;
  readonly ledger: Ledger;
  readonly counters: CounterStore;
  readonly tallies: TallyStore;
  readonly audit: AuditSink & AuditReader;
  readonly #db: Database.Database;
  readonly #owned: boolean;

  constructor(options: SqliteStoresOptions | string = {}) {
    const opts: SqliteStoresOptions = typeof options === 'string' ? { filename: options } : options;
    if (typeof opts !== 'object' || opts === null)
      throw new TypeError(`SqliteStores expects a filename or an options object, got ${describe(options)}`);
    const prefix = opts.tablePrefix ?? 'toolgate_';
    requireIdentifier(prefix, 'SqliteStores option "tablePrefix"');
    if (opts.filename !== undefined && typeof opts.filename !== 'string')
      throw new TypeError(`SqliteStores option "filename" must be a string, got ${describe(opts.filename)}`);
    const busy = opts.busyTimeoutMs ?? 5000;
    requireNumber(busy, 'SqliteStores option "busyTimeoutMs"');
    const now = opts.now ?? Date.now;
    if (typeof now !== 'function')
      throw new TypeError(`SqliteStores option "now" must be a function, got ${describe(now)}`);
    this.#owned = opts.database === undefined;
    const db = (this.#db = opts.database ?? new Database(opts.filename ?? ':memory:'));
    if (this.#owned) {
      db.pragma(`busy_timeout = ${Math.floor(busy)}`);
      if ((opts.filename ?? ':memory:') !== ':memory:') db.pragma('journal_mode = WAL');
    }
    const t = (name: string): string => `${prefix}${name}`;
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${t('approvals')} (id TEXT PRIMARY KEY, tenant TEXT, status TEXT NOT NULL,
        created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, record TEXT NOT NULL, answer TEXT, answered_at INTEGER);
      CREATE INDEX IF NOT EXISTS ${t('approvals_created')} ON ${t('approvals')} (created_at);
      CREATE TABLE IF NOT EXISTS ${t('used_nonces')} (nonce TEXT PRIMARY KEY, until INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS ${t('remembered')} (key TEXT PRIMARY KEY, answer TEXT NOT NULL, until INTEGER);
      CREATE TABLE IF NOT EXISTS ${t('calls')} (key TEXT PRIMARY KEY, owner TEXT NOT NULL, reserved_at INTEGER NOT NULL,
        lease_until INTEGER NOT NULL, outcome TEXT, recorded_at INTEGER);
      CREATE INDEX IF NOT EXISTS ${t('calls_reserved')} ON ${t('calls')} (reserved_at);
      CREATE TABLE IF NOT EXISTS ${t('counter_events')} (key TEXT NOT NULL, at INTEGER NOT NULL, cost REAL NOT NULL);
      CREATE INDEX IF NOT EXISTS ${t('counter_events_key')} ON ${t('counter_events')} (key, at);
      CREATE TABLE IF NOT EXISTS ${t('run_tallies')} (run TEXT PRIMARY KEY, iterations REAL NOT NULL, attempts REAL NOT NULL,
        cost REAL NOT NULL);
      CREATE TABLE IF NOT EXISTS ${t('audit')} (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, tenant TEXT,
        caller TEXT, tool TEXT NOT NULL, effect TEXT NOT NULL, record TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS ${t('audit_at')} ON ${t('audit')} (at);
    `);
    this.approvals = approvalsIn(db, t('approvals'), now);
    this.nonces = noncesIn(db, t('used_nonces'), now);
    this.remembered = rememberedIn(db, t('remembered'), now);
    this.ledger = ledgerIn(db, t('calls'), now);
    this.counters = countersIn(db, t('counter_events'), now, `sqlite ${db.name} table ${t('counter_events')}`);
    this.tallies = talliesIn(db, t('run_tallies'));
    this.audit = auditIn(db, t('audit'));
  }

  /** Closes the database when the stores opened it. */
  close(): void {
    if (this.#owned) this.#db.close();
  }
}

function approvalsIn(db: Database.Database, table: string, now: () => number): ApprovalStore {
  const insert = db.prepare(
    `INSERT OR IGNORE INTO ${table} (id, tenant, status, created_at, expires_at, record, answer, answered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const select = db.prepare(`SELECT * FROM ${table} WHERE id = ?`);
  const all = db.prepare(`SELECT * FROM ${table} ORDER BY created_at, id`);
  const answer = db.prepare(
    `UPDATE ${table} SET status = 'answered', answer = ?, answered_at = ? WHERE id = ? AND status = 'pending' AND expires_at >= ?`,
  );
  const listeners = new Set<(id: string) => void>();
  const tell = (id: string): void => {
    for (const listener of listeners) {
      try {
        listener(id);
      } catch {
        // A listener's failure is its own.
      }
    }
  };
  const read = (row: Row | undefined): PendingRecord | undefined => (row ? pendingOf(row, now()) : undefined);
  return {
    async put(pending: PendingRecord): Promise<void> {
      checkPending(pending);
      const { status, answer: given, answeredAt, ...rest } = pending;
      const changes = insert.run(
        pending.id,
        pending.tenant,
        status,
        pending.createdAt,
        pending.expiresAt,
        JSON.stringify(rest),
        given ? JSON.stringify(given) : null,
        answeredAt,
      ).changes;
      if (changes === 1) tell(pending.id);
    },
    async get(id: string): Promise<PendingRecord | undefined> {
      return read(select.get(id) as Row | undefined);
    },
    async list(filter: PendingFilter = {}): Promise<PendingRecord[]> {
      const out: PendingRecord[] = [];
      for (const row of all.iterate() as Iterable<Row>) {
        const record = pendingOf(row, now());
        if (!record) continue;
        if (filter.tenant !== undefined && record.tenant !== filter.tenant) continue;
        if (filter.status !== undefined && record.status !== filter.status) continue;
        out.push(record);
      }
      return out;
    },
    async answer(id: string, given: Answer): Promise<boolean> {
      checkAnswer(given);
      const at = now();
      const won = answer.run(JSON.stringify(given), at, id, at).changes === 1;
      if (won) tell(id);
      return won;
    },
    watch(listener: (id: string) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

function noncesIn(db: Database.Database, table: string, now: () => number): NonceStore {
  const drop = db.prepare(`DELETE FROM ${table} WHERE nonce = ? AND until <= ?`);
  const insert = db.prepare(`INSERT OR IGNORE INTO ${table} (nonce, until) VALUES (?, ?)`);
  const consume = db.transaction((nonce: string, at: number, until: number) => {
    drop.run(nonce, at);
    return insert.run(nonce, until).changes === 1;
  });
  return {
    async consume(nonce: string, ttlMs: number): Promise<boolean> {
      requireKey(nonce, 'nonce');
      requireNumber(ttlMs, 'ttlMs');
      const at = now();
      return consume.immediate(nonce, at, at + Math.max(1, ttlMs));
    },
  };
}

function rememberedIn(db: Database.Database, table: string, now: () => number): RememberStore {
  const select = db.prepare(`SELECT answer, until FROM ${table} WHERE key = ?`);
  const upsert = db.prepare(`INSERT OR REPLACE INTO ${table} (key, answer, until) VALUES (?, ?, ?)`);
  return {
    async recall(key: string): Promise<RememberedAnswer | undefined> {
      const row = select.get(key) as { answer: string; until: number | null } | undefined;
      if (!row || (row.until !== null && row.until <= now())) return undefined;
      try {
        return readRemembered(parseJsonText(row.answer));
      } catch {
        return undefined;
      }
    },
    async remember(key: string, answer: RememberedAnswer, ttlMs?: number): Promise<void> {
      requireKey(key, 'key');
      if (ttlMs !== undefined) requireNumber(ttlMs, 'ttlMs');
      upsert.run(key, JSON.stringify(rememberedRow(answer)), ttlMs === undefined ? null : now() + ttlMs);
    },
  };
}

function ledgerIn(db: Database.Database, table: string, now: () => number): Ledger {
  const insert = db.prepare(
    `INSERT OR IGNORE INTO ${table} (key, owner, reserved_at, lease_until, outcome, recorded_at) VALUES (?, ?, ?, ?, NULL, NULL)`,
  );
  const select = db.prepare(`SELECT * FROM ${table} WHERE key = ?`);
  const record = db.prepare(
    `UPDATE ${table} SET outcome = ?, recorded_at = ? WHERE key = ? AND owner = ? AND recorded_at IS NULL`,
  );
  const release = db.prepare(`DELETE FROM ${table} WHERE key = ? AND owner = ? AND recorded_at IS NULL`);
  // Only a row that reads as unknown: never recorded, and its lease has passed (its worker is gone).
  const settle = db.prepare(
    `UPDATE ${table} SET outcome = ?, recorded_at = ? WHERE key = ? AND recorded_at IS NULL AND lease_until <= ?`,
  );
  const entry = (key: string): LedgerEntry | undefined => {
    const row = select.get(key) as Row | undefined;
    return row && ledgerEntryOf(row);
  };
  return {
    async reserve(key: string, owner: string, leaseMs: number): Promise<LedgerReservation> {
      requireKey(key, 'key');
      requireKey(owner, 'owner');
      requireNumber(leaseMs, 'leaseMs');
      const at = now();
      if (insert.run(key, owner, at, at + leaseMs).changes === 1) return { state: 'reserved' };
      const row = entry(key);
      if (!row) throw new Error(`the ledger row ${JSON.stringify(key)} vanished`);
      return reservationOf(row, at);
    },
    async record(key: string, owner: string, outcome: LedgerOutcome): Promise<boolean> {
      return record.run(JSON.stringify(outcomeRow(outcome)), now(), key, owner).changes === 1;
    },
    async release(key: string, owner: string): Promise<boolean> {
      return release.run(key, owner).changes === 1;
    },
    async inspect(key: string): Promise<LedgerEntry | undefined> {
      return entry(key);
    },
    async list(query?: LedgerQuery): Promise<LedgerEntry[]> {
      const q = ledgerQueryOf(query);
      const where: string[] = [];
      const params: number[] = [];
      if (q.unknown) {
        where.push('recorded_at IS NULL AND lease_until <= ?');
        params.push(now());
      }
      if (q.since !== undefined) {
        where.push('reserved_at >= ?');
        params.push(q.since);
      }
      const sql = `SELECT * FROM ${table}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY reserved_at, key LIMIT ?`;
      return (db.prepare(sql).all(...params, q.limit) as Row[]).map(ledgerEntryOf);
    },
    async settle(key: string, settlement: LedgerSettlement): Promise<boolean> {
      const outcome = JSON.stringify(settledOutcome(settlement));
      requireKey(key, 'key');
      const at = now();
      return settle.run(outcome, at, key, at).changes === 1;
    },
  };
}

function countersIn(db: Database.Database, table: string, now: () => number, name: string): CounterStore {
  const expire = db.prepare(`DELETE FROM ${table} WHERE key = ? AND at <= ?`);
  const entries = db.prepare(`SELECT at, cost FROM ${table} WHERE key = ? AND at > ? ORDER BY at`);
  const insert = db.prepare(`INSERT INTO ${table} (key, at, cost) VALUES (?, ?, ?)`);
  const window = (key: string, windowMs: number, at: number) => {
    const rows = entries.all(key, at - windowMs) as { at: number; cost: number }[];
    return { rows, total: rows.reduce((sum, r) => sum + r.cost, 0) };
  };
  const consume = db.transaction((charges: readonly CounterCharge[]): CounterVerdict => {
    const at = now();
    const used: number[] = [];
    // Each charge's total before it was added: what a refusal reports (nothing of the call stays charged).
    const before: number[] = [];
    for (const [i, c] of charges.entries()) {
      expire.run(c.key, at - c.windowMs);
      const { rows, total } = window(c.key, c.windowMs, at);
      // Charges earlier in this call on the same key are already inserted, so `total` includes them.
      if (total + c.cost > c.limit) {
        const retry = retryAfter(rows, total + c.cost - c.limit, c.windowMs, at, c.cost, c.limit);
        throw new Refused({ allowed: false, used: [...before, total], index: i, retryAfterMs: retry });
      }
      if (c.cost > 0) insert.run(c.key, at, c.cost);
      before.push(total);
      used.push(total + c.cost);
    }
    return { allowed: true, used };
  });
  return {
    name,
    async consume(charges: readonly CounterCharge[]): Promise<CounterVerdict> {
      checkCharges(charges);
      try {
        return consume.immediate(charges);
      } catch (error) {
        // Throwing rolls the transaction back: a refused attempt spends no slot of any counter.
        if (error instanceof Refused) return error.verdict;
        throw error;
      }
    },
    async peek(key: string, windowMs: number): Promise<number> {
      requireKey(key, 'key');
      requireNumber(windowMs, 'windowMs', 1);
      return window(key, windowMs, now()).total;
    },
  };
}

function talliesIn(db: Database.Database, table: string): TallyStore {
  const read = db.prepare<[string], RunSpend>(`SELECT iterations, attempts, cost FROM ${table} WHERE run = ?`);
  const write = db.prepare(`INSERT OR REPLACE INTO ${table} (run, iterations, attempts, cost) VALUES (?, ?, ?, ?)`);
  // IMMEDIATE takes the write lock before the read, so two processes cannot both read the old tally.
  const spend = db.transaction((run: string, add: RunSpend, caps: RunCaps, floor: RunSpend): SpendVerdict => {
    const { total, cap } = charged(read.get(run), add, caps, floor);
    write.run(run, total.iterations, total.attempts, total.cost);
    return cap === null ? { ok: true } : { ok: false, cap };
  });
  return {
    async spend(run: string, add: RunSpend, caps: RunCaps, floor: RunSpend): Promise<SpendVerdict> {
      requireKey(run, 'run');
      return spend.immediate(run, add, caps, floor);
    },
  };
}

/** Carries a refusal out of a transaction, rolling it back. */
class Refused extends Error {
  readonly verdict: CounterVerdict;

  constructor(verdict: CounterVerdict) {
    super('refused');
    this.verdict = verdict;
  }
}

function auditIn(db: Database.Database, table: string): AuditSink & AuditReader {
  const insert = db.prepare(
    `INSERT INTO ${table} (at, tenant, caller, tool, effect, record) VALUES (?, ?, ?, ?, ?, ?)`,
  );
  return {
    write(record: AuditRecord): void {
      const d = record.decision;
      insert.run(Date.parse(record.time), d.tenant, record.caller, d.canonical, d.effect, JSON.stringify(record));
    },
    async query(query?: AuditQuery): Promise<AuditRecord[]> {
      const q = auditBounds(query);
      const where: string[] = [];
      const params: (string | number)[] = [];
      const add = (clause: string, value: string | number | undefined): void => {
        if (value === undefined) return;
        where.push(clause);
        params.push(value);
      };
      add('tenant = ?', q.tenant);
      add('caller = ?', q.caller);
      add('tool = ?', q.tool);
      add('effect = ?', q.effect);
      add('at >= ?', q.since);
      add('at < ?', q.until);
      const sql = `SELECT record FROM ${table}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY at DESC, id DESC LIMIT ?`;
      const rows = db.prepare(sql).all(...params, q.limit) as { record: string }[];
      return rows.reverse().map((r) => parseJsonText(r.record) as AuditRecord);
    },
  };
}

// The 0.1 names of the runner's SQLite store: the runner takes these stores now (`AgentRunner({ stores })`).
export { SqliteStores as SqliteApprovalStore, type SqliteStoresOptions as SqliteApprovalStoreOptions };
