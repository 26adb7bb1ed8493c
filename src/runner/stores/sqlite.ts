/**
 * `toolgate/sqlite`: an approvals store in an embedded SQLite database (better-sqlite3, an optional peer
 * dependency; the root entry never imports this file). For runners whose process restarts between a pause
 * and its resume: remembered answers, used decision nonces and the ledger of executed calls survive it.
 */
import Database from 'better-sqlite3';
import {
  charged,
  type ApprovalStore,
  type LedgerEntry,
  type LedgerOutcome,
  type RememberedAnswer,
  type RunCaps,
  type RunSpend,
  type SpendVerdict,
} from '../approval-store.js';
import { describe } from '../../names.js';

/** Options of {@link SqliteApprovalStore}. */
export interface SqliteApprovalStoreOptions {
  /** The database file (created if missing), or ':memory:'. Ignored when `database` is given. @default ':memory:' */
  readonly filename?: string;
  /** An open better-sqlite3 database to use instead (the store does not close it). */
  readonly database?: Database.Database;
  /** Prefix of the store's four tables. @default 'toolgate_' */
  readonly tablePrefix?: string;
}

/**
 * An {@link ApprovalStore} in SQLite. `consume` and `claim` are single INSERT OR IGNORE statements, so of
 * two runners (or processes, with the database on a shared disk in WAL mode) resuming one state, exactly
 * one executes each call.
 *
 * @example
 * import { SqliteApprovalStore } from 'toolgate/sqlite';
 * const approvals = new SqliteApprovalStore({ filename: 'approvals.db' });
 * const runner = new AgentRunner({ registry, model, approvals, secret: process.env.APPROVAL_KEY });
 */
export class SqliteApprovalStore implements ApprovalStore {
  readonly #db: Database.Database;
  readonly #owned: boolean;
  readonly #recall: Database.Statement<[string], { answer: string; scope: string; mac: string }>;
  readonly #remember: Database.Statement<[string, string, string, string, number]>;
  readonly #consume: Database.Statement<[string, number]>;
  readonly #entry: Database.Statement<[string], { outcome: string | null }>;
  readonly #claim: Database.Statement<[string, number]>;
  readonly #settle: Database.Statement<[number, string, string]>;
  readonly #spend: (run: string, add: RunSpend, caps: RunCaps, floor: RunSpend) => SpendVerdict;

  constructor(options: SqliteApprovalStoreOptions | string = {}) {
    const opts: SqliteApprovalStoreOptions = typeof options === 'string' ? { filename: options } : options;
    if (typeof opts !== 'object' || opts === null)
      throw new TypeError(`SqliteApprovalStore expects a filename or an options object, got ${describe(options)}`);
    const prefix = opts.tablePrefix ?? 'toolgate_';
    if (typeof prefix !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(prefix)) {
      throw new TypeError(
        `SqliteApprovalStore option "tablePrefix" must be letters, digits and underscores, got ${describe(prefix)}`,
      );
    }
    if (opts.filename !== undefined && typeof opts.filename !== 'string')
      throw new TypeError(`SqliteApprovalStore option "filename" must be a string, got ${describe(opts.filename)}`);
    this.#owned = opts.database === undefined;
    this.#db = opts.database ?? new Database(opts.filename ?? ':memory:');
    if (this.#owned && (opts.filename ?? ':memory:') !== ':memory:') this.#db.pragma('journal_mode = WAL');
    const answers = `${prefix}answers`;
    const nonces = `${prefix}nonces`;
    const ledger = `${prefix}ledger`;
    const tallies = `${prefix}tallies`;
    this.#db.exec(`
      CREATE TABLE IF NOT EXISTS ${answers} (key TEXT PRIMARY KEY, answer TEXT NOT NULL, scope TEXT NOT NULL, mac TEXT NOT NULL, at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS ${nonces} (nonce TEXT PRIMARY KEY, at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS ${ledger} (key TEXT PRIMARY KEY, outcome TEXT, claimed_at INTEGER NOT NULL, settled_at INTEGER);
      CREATE TABLE IF NOT EXISTS ${tallies} (run TEXT PRIMARY KEY, iterations REAL NOT NULL, attempts REAL NOT NULL, cost REAL NOT NULL);
    `);
    this.#recall = this.#db.prepare(`SELECT answer, scope, mac FROM ${answers} WHERE key = ?`);
    this.#remember = this.#db.prepare(
      `INSERT OR REPLACE INTO ${answers} (key, answer, scope, mac, at) VALUES (?, ?, ?, ?, ?)`,
    );
    this.#consume = this.#db.prepare(`INSERT OR IGNORE INTO ${nonces} (nonce, at) VALUES (?, ?)`);
    this.#entry = this.#db.prepare(`SELECT outcome FROM ${ledger} WHERE key = ?`);
    this.#claim = this.#db.prepare(`INSERT OR IGNORE INTO ${ledger} (key, outcome, claimed_at) VALUES (?, NULL, ?)`);
    this.#settle = this.#db.prepare(`UPDATE ${ledger} SET settled_at = ?, outcome = ? WHERE key = ?`);
    const read = this.#db.prepare<[string], RunSpend>(
      `SELECT iterations, attempts, cost FROM ${tallies} WHERE run = ?`,
    );
    const write = this.#db.prepare<[string, number, number, number]>(
      `INSERT OR REPLACE INTO ${tallies} (run, iterations, attempts, cost) VALUES (?, ?, ?, ?)`,
    );
    // IMMEDIATE takes the write lock before the read, so two processes cannot both read the old tally.
    const spend = this.#db.transaction((run: string, add: RunSpend, caps: RunCaps, floor: RunSpend): SpendVerdict => {
      const { total, cap } = charged(read.get(run), add, caps, floor);
      write.run(run, total.iterations, total.attempts, total.cost);
      return cap === null ? { ok: true } : { ok: false, cap };
    });
    this.#spend = (run, add, caps, floor) => spend.immediate(run, add, caps, floor);
  }

  async recall(key: string): Promise<RememberedAnswer | undefined> {
    const row = this.#recall.get(key);
    if (!row) return undefined;
    if ((row.answer !== 'allow' && row.answer !== 'deny') || (row.scope !== 'run' && row.scope !== 'session'))
      return undefined;
    return { answer: row.answer, scope: row.scope, mac: row.mac };
  }

  async remember(key: string, answer: RememberedAnswer): Promise<void> {
    this.#remember.run(key, answer.answer, answer.scope, answer.mac, Date.now());
  }

  async consume(nonce: string): Promise<boolean> {
    return this.#consume.run(nonce, Date.now()).changes === 1;
  }

  async entry(key: string): Promise<LedgerEntry | undefined> {
    const row = this.#entry.get(key);
    if (!row) return undefined;
    return toEntry(row.outcome);
  }

  async claim(key: string): Promise<LedgerEntry | null> {
    if (this.#claim.run(key, Date.now()).changes === 1) return null;
    return (await this.entry(key)) ?? { settled: false };
  }

  async settle(key: string, outcome: LedgerOutcome): Promise<void> {
    this.#settle.run(Date.now(), JSON.stringify({ content: outcome.content, isError: outcome.isError }), key);
  }

  async spend(run: string, add: RunSpend, caps: RunCaps, floor: RunSpend): Promise<SpendVerdict> {
    return this.#spend(run, add, caps, floor);
  }

  /** Closes the database when the store opened it. */
  close(): void {
    if (this.#owned) this.#db.close();
  }
}

function toEntry(outcome: string | null): LedgerEntry {
  if (outcome === null) return { settled: false };
  try {
    const parsed = JSON.parse(outcome) as { content?: unknown; isError?: unknown };
    if (typeof parsed.content === 'string' && typeof parsed.isError === 'boolean')
      return { settled: true, outcome: { content: parsed.content, isError: parsed.isError } };
  } catch {
    // An unreadable outcome is an unknown one: the call is still never run again.
  }
  return { settled: false };
}
