/**
 * `toolgate/postgres`: pending approvals (with LISTEN/NOTIFY for a live inbox), remembered answers, single-use
 * nonces, the execution ledger, counters and the audit trail in PostgreSQL (`pg`, an optional peer; the root entry never
 * imports this file). Every check-and-write is one statement (`INSERT … ON CONFLICT`, a guarded `UPDATE`), so
 * it is atomic across any number of workers without locks of our own; times come from the server's clock, so
 * workers' clocks do not matter. The schema is created by {@link PostgresStores.migrate}, on request.
 */
import pg from 'pg';
import { describe } from '../names.js';
import { CoalescedConsume } from './coalesce.js';
import { approvalsIn } from './postgres-approvals.js';
import { AuditQueue, columnsOf } from './postgres-audit.js';
import { NOW, POSTGRES_MIGRATIONS } from './postgres-sql.js';

import {
  auditBounds,
  checkCharges,
  ledgerEntryOf,
  ledgerQueryOf,
  outcomeRow,
  readRemembered,
  rememberedRow,
  requireIdentifier,
  requireKey,
  requireNumber,
  charged,
  reservationOf,
  settledOutcome,
} from './shared.js';

import type {
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
  RememberStore,
  RememberedAnswer,
  TallyStore,
  RunCaps,
  RunSpend,
  SpendVerdict,
} from './types.js';

export { POSTGRES_MIGRATIONS } from './postgres-sql.js';

/** Options of {@link PostgresStores}. */
export interface PostgresStoresOptions {
  /** A `postgres://` URL. Ignored when `pool` is given. @default the PG* environment variables */
  readonly connectionString?: string;
  /** A pool to use instead (the stores do not end it). */
  readonly pool?: pg.Pool;
  /** The schema holding the tables (created by `migrate()`). @default 'toolgate' */
  readonly schema?: string;
  /** How long to wait for a connection before the operation fails (closed). @default 5000 */
  readonly connectionTimeoutMs?: number;
  /** How long one statement may take before it fails (closed). @default 10_000 */
  readonly statementTimeoutMs?: number;
  /**
   * At most this many audit records wait to be written; a record written while the queue is full is dropped
   * and reported (a `TOOLGATE_AUDIT` warning through `auditRegistry`). @default 10_000
   */
  readonly auditQueueLimit?: number;
}

/**
 * The PostgreSQL audit trail: `write` queues a record and resolves once it is committed. Records are written
 * in the order `write` was called, in batches (one INSERT in flight at a time, the next gathering meanwhile),
 * so one worker's records are inserted in order and a write never waits for a round trip per record ahead.
 */
export interface PostgresAuditSink extends AuditSink, AuditReader {
  write(record: AuditRecord): Promise<void>;
  /** Resolves when every record queued so far is committed (or has failed). */
  flush(): Promise<void>;
}

type Row = Record<string, unknown>;

/**
 * The PostgreSQL stores: `approvals`, `nonces`, `remembered`, `ledger`, `tallies`, `counters`, `audit`: a deployment
 * with PostgreSQL alone shares everything, limits included (Redis's counters are the faster choice).
 *
 * @example
 * import { PostgresStores } from 'toolgate/postgres';
 * const pgStores = new PostgresStores({ connectionString: process.env.DATABASE_URL });
 * await pgStores.migrate(); // once per deployment: creates schema "toolgate"
 */
export class PostgresStores {
  readonly approvals: ApprovalStore;
  readonly nonces: NonceStore;
  readonly remembered: RememberStore;
  readonly ledger: Ledger;
  readonly tallies: TallyStore;
  /** Counters over sliding windows: exact, the server's clock, one statement per charge (see migration 3). */
  readonly counters: CounterStore;
  readonly audit: PostgresAuditSink;
  /** The schema, as given. */
  readonly schema: string;
  readonly #pool: pg.Pool;
  readonly #owned: boolean;
  readonly #s: string;
  readonly #audit: AuditQueue;

  constructor(options: PostgresStoresOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`PostgresStores expects an options object, got ${describe(options)}`);
    const schema = options.schema ?? 'toolgate';
    requireIdentifier(schema, 'PostgresStores option "schema"');
    const connectMs = options.connectionTimeoutMs ?? 5000;
    requireNumber(connectMs, 'PostgresStores option "connectionTimeoutMs"', 1);
    const statementMs = options.statementTimeoutMs ?? 10_000;
    requireNumber(statementMs, 'PostgresStores option "statementTimeoutMs"', 1);
    const auditQueue = options.auditQueueLimit ?? 10_000;
    requireNumber(auditQueue, 'PostgresStores option "auditQueueLimit"', 1);
    if (options.connectionString !== undefined && typeof options.connectionString !== 'string')
      throw new TypeError(
        `PostgresStores option "connectionString" must be a string, got ${describe(options.connectionString)}`,
      );
    this.schema = schema;
    this.#s = `"${schema}"`;
    this.#owned = options.pool === undefined;
    this.#pool =
      options.pool ??
      new pg.Pool({
        ...(options.connectionString !== undefined ? { connectionString: options.connectionString } : {}),
        connectionTimeoutMillis: connectMs,
        query_timeout: statementMs,
        statement_timeout: statementMs,
      });
    // An idle client whose connection dies emits 'error' on the pool; unhandled, it would end the process.
    // The next query gets a fresh connection (or fails, and its call is refused).
    if (this.#owned) this.#pool.on('error', () => undefined);
    const q = (text: string, values?: unknown[]): Promise<pg.QueryResult<Row>> => this.#pool.query<Row>(text, values);
    const s = this.#s;
    this.approvals = approvalsIn(q, s, schema, this.#pool);
    this.nonces = {
      async consume(nonce: string, ttlMs: number): Promise<boolean> {
        requireKey(nonce, 'nonce');
        requireNumber(ttlMs, 'ttlMs');
        const r = await q(
          `INSERT INTO ${s}.used_nonces (nonce, until) VALUES ($1, ${NOW} + $2)
           ON CONFLICT (nonce) DO UPDATE SET until = EXCLUDED.until WHERE ${s}.used_nonces.until <= ${NOW}
           RETURNING nonce`,
          [nonce, Math.max(1, Math.ceil(ttlMs))],
        );
        return r.rowCount === 1;
      },
    };
    this.remembered = {
      async recall(key: string): Promise<RememberedAnswer | undefined> {
        const r = await q(`SELECT answer FROM ${s}.remembered WHERE key = $1 AND (until IS NULL OR until > ${NOW})`, [
          key,
        ]);
        return r.rows[0] ? readRemembered(r.rows[0]['answer']) : undefined;
      },
      async remember(key: string, answer: RememberedAnswer, ttlMs?: number): Promise<void> {
        requireKey(key, 'key');
        if (ttlMs !== undefined) requireNumber(ttlMs, 'ttlMs');
        await q(
          `INSERT INTO ${s}.remembered (key, answer, until) VALUES ($1, $2, ${NOW} + $3)
           ON CONFLICT (key) DO UPDATE SET answer = EXCLUDED.answer, until = EXCLUDED.until`,
          [key, JSON.stringify(rememberedRow(answer)), ttlMs === undefined ? null : Math.ceil(ttlMs)],
        );
      },
    };
    this.ledger = {
      async reserve(key: string, owner: string, leaseMs: number): Promise<LedgerReservation> {
        requireKey(key, 'key');
        requireKey(owner, 'owner');
        requireNumber(leaseMs, 'leaseMs');
        // One statement: the insert wins, or the existing row comes back with the server's now.
        const r = await q(
          `WITH ins AS (
             INSERT INTO ${s}.calls (key, owner, reserved_at, lease_until) VALUES ($1, $2, ${NOW}, ${NOW} + $3)
             ON CONFLICT (key) DO NOTHING RETURNING key)
           SELECT (SELECT count(*) FROM ins) AS won, c.*, ${NOW} AS now FROM (SELECT 1) one
             LEFT JOIN ${s}.calls c ON c.key = $1`,
          [key, owner, Math.ceil(leaseMs)],
        );
        const row = r.rows[0];
        if (!row) throw new Error('the ledger query returned no row');
        if (Number(row['won']) === 1) return { state: 'reserved' };
        if (row['key'] === null) {
          // Inserted by another worker after our statement's snapshot: it is theirs; read it on the next try.
          return { state: 'held', owner: '(another worker)', until: Number(row['now']) + Math.ceil(leaseMs) };
        }
        return reservationOf(ledgerEntryOf(row), Number(row['now']));
      },
      async record(key: string, owner: string, outcome: LedgerOutcome): Promise<boolean> {
        const r = await q(
          `UPDATE ${s}.calls SET outcome = $3, recorded_at = ${NOW} WHERE key = $1 AND owner = $2 AND recorded_at IS NULL`,
          [key, owner, JSON.stringify(outcomeRow(outcome))],
        );
        return r.rowCount === 1;
      },
      async release(key: string, owner: string): Promise<boolean> {
        const r = await q(`DELETE FROM ${s}.calls WHERE key = $1 AND owner = $2 AND recorded_at IS NULL`, [key, owner]);
        return r.rowCount === 1;
      },
      async inspect(key: string): Promise<LedgerEntry | undefined> {
        const r = await q(`SELECT * FROM ${s}.calls WHERE key = $1`, [key]);
        return r.rows[0] ? ledgerEntryOf(r.rows[0]) : undefined;
      },
      async list(query?: LedgerQuery): Promise<LedgerEntry[]> {
        const lq = ledgerQueryOf(query);
        const where: string[] = [];
        const values: unknown[] = [];
        if (lq.unknown) where.push(`recorded_at IS NULL AND lease_until <= ${NOW}`);
        if (lq.since !== undefined) {
          values.push(Math.floor(lq.since));
          where.push(`reserved_at >= $${values.length}`);
        }
        values.push(lq.limit);
        const r = await q(
          `SELECT * FROM ${s}.calls${where.length ? ` WHERE ${where.join(' AND ')}` : ''}
           ORDER BY reserved_at, key LIMIT $${values.length}`,
          values,
        );
        return r.rows.map(ledgerEntryOf);
      },
      async settle(key: string, settlement: LedgerSettlement): Promise<boolean> {
        const outcome = JSON.stringify(settledOutcome(settlement));
        requireKey(key, 'key');
        // One guarded UPDATE: only a row that reads as unknown on the server's clock (its worker is gone).
        const r = await q(
          `UPDATE ${s}.calls SET outcome = $2, recorded_at = ${NOW}
           WHERE key = $1 AND recorded_at IS NULL AND lease_until <= ${NOW}`,
          [key, outcome],
        );
        return r.rowCount === 1;
      },
    };
    // One statement per server step: a lone set by consume_counters, a coalesced batch by consume_counter_batch.
    const batch = new CoalescedConsume(async (sets) => {
      const flat = sets.flat();
      const columns = [
        flat.map((c) => c.key),
        flat.map((c) => c.cost),
        flat.map((c) => c.limit),
        flat.map((c) => Math.ceil(c.windowMs)),
      ];
      const r =
        sets.length === 1
          ? await q(`SELECT allowed, refused, retry_ms, used FROM ${s}.consume_counters($1, $2, $3, $4)`, columns)
          : await q(`SELECT allowed, refused, retry_ms, used FROM ${s}.consume_counter_batch($1, $2, $3, $4, $5)`, [
              ...columns,
              sets.map((set) => set.length),
            ]);
      return r.rows.map(counterVerdictOf);
    });
    this.counters = {
      name: `postgres ${serverOf(options.connectionString, this.#pool)} schema ${JSON.stringify(schema)}`,
      consume(charges: readonly CounterCharge[]): Promise<CounterVerdict> {
        try {
          checkCharges(charges);
        } catch (error) {
          return Promise.reject(error);
        }
        return batch.push(charges);
      },
      async peek(key: string, windowMs: number): Promise<number> {
        requireKey(key, 'key');
        requireNumber(windowMs, 'windowMs', 1);
        const r = await q(
          `SELECT coalesce(sum(cost), 0) AS total FROM ${s}.counter_events WHERE key = $1 AND at > ${NOW} - $2`,
          [key, Math.ceil(windowMs)],
        );
        return Number(r.rows[0]?.['total'] ?? 0);
      },
    };
    const pool = this.#pool;
    this.tallies = {
      async spend(run: string, add: RunSpend, caps: RunCaps, floor: RunSpend): Promise<SpendVerdict> {
        requireKey(run, 'run');
        // One transaction holding the run's row lock: read, decide with the runner's one rule, write.
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query(
            `INSERT INTO ${s}.run_tallies (run, iterations, attempts, cost) VALUES ($1, 0, 0, 0) ON CONFLICT (run) DO NOTHING`,
            [run],
          );
          const row = (
            await client.query<RunSpend>(
              `SELECT iterations, attempts, cost FROM ${s}.run_tallies WHERE run = $1 FOR UPDATE`,
              [run],
            )
          ).rows[0];
          const { total, cap } = charged(row, add, caps, floor);
          await client.query(`UPDATE ${s}.run_tallies SET iterations = $2, attempts = $3, cost = $4 WHERE run = $1`, [
            run,
            total.iterations,
            total.attempts,
            total.cost,
          ]);
          await client.query('COMMIT');
          return cap === null ? { ok: true } : { ok: false, cap };
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw error;
        } finally {
          client.release();
        }
      },
    };
    this.#audit = new AuditQueue(async (records) => {
      await q(
        `INSERT INTO ${s}.audit (at, tenant, caller, tool, effect, stage, record)
           SELECT at, tenant, caller, tool, effect, stage, record
           FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[])
             WITH ORDINALITY AS u(at, tenant, caller, tool, effect, stage, record, n)
           ORDER BY n`,
        columnsOf(records),
      );
    }, auditQueue);
    const queue = this.#audit;
    this.audit = {
      write: (record: AuditRecord): Promise<void> => queue.write(record),
      flush: (): Promise<void> => queue.flush(),
      async query(query?: AuditQuery): Promise<AuditRecord[]> {
        const b = auditBounds(query);
        const where: string[] = [];
        const values: unknown[] = [];
        const add = (column: string, op: string, value: unknown): void => {
          if (value === undefined) return;
          values.push(value);
          where.push(`${column} ${op} $${values.length}`);
        };
        add('tenant', '=', b.tenant);
        add('caller', '=', b.caller);
        add('tool', '=', b.tool);
        add('effect', '=', b.effect);
        add('at', '>=', b.since === undefined ? undefined : new Date(b.since).toISOString());
        add('at', '<', b.until === undefined ? undefined : new Date(b.until).toISOString());
        values.push(b.limit);
        // The newest by the decision's time (then by insertion, which one worker's queue keeps in its order).
        const r = await q(
          `SELECT record FROM ${s}.audit${where.length ? ` WHERE ${where.join(' AND ')}` : ''}
           ORDER BY at DESC, id DESC LIMIT $${values.length}`,
          values,
        );
        return r.rows.reverse().map((row) => row['record'] as AuditRecord);
      },
    };
  }

  /**
   * Creates the schema and applies the shipped migrations it has not seen (idempotent; concurrent callers
   * wait on an advisory lock). Returns the versions applied now.
   */
  async migrate(): Promise<number[]> {
    const client = await this.#pool.connect();
    const applied: number[] = [];
    try {
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`toolgate:${this.schema}`]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.#s}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.#s}.migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const seen = new Set(
        (await client.query<{ version: number }>(`SELECT version FROM ${this.#s}.migrations`)).rows.map(
          (r) => r.version,
        ),
      );
      for (const m of POSTGRES_MIGRATIONS) {
        if (seen.has(m.version)) continue;
        await client.query(m.sql(this.#s));
        await client.query(`INSERT INTO ${this.#s}.migrations (version) VALUES ($1)`, [m.version]);
        applied.push(m.version);
      }
      await client.query('COMMIT');
      return applied;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** Drops the schema and everything in it (tests; an operator resetting a deployment). */
  async dropSchema(): Promise<void> {
    await this.#pool.query(`DROP SCHEMA IF EXISTS ${this.#s} CASCADE`);
  }

  /**
   * Writes the audit records still queued (and refuses new ones), then ends the pool when the stores created
   * it. Call it before the process exits: a record still queued at a crash is lost (docs/stores.md).
   */
  async close(): Promise<void> {
    await this.#audit.close();
    if (this.#owned) await this.#pool.end();
  }
}

/** A verdict from a row of the counter functions. */
function counterVerdictOf(row: Row): CounterVerdict {
  const used = (row['used'] as number[]).map(Number);
  if (row['allowed'] === true) return { allowed: true, used };
  const retry = Number(row['retry_ms']);
  return { allowed: false, used, index: Number(row['refused']), retryAfterMs: retry < 0 ? null : retry };
}

/** Where the pool connects, for messages: host, port and database, never a user or password. */
function serverOf(connectionString: string | undefined, pool: pg.Pool): string {
  if (connectionString !== undefined) {
    try {
      const url = new URL(connectionString);
      return `${url.host || 'localhost'}${url.pathname.length > 1 ? url.pathname : ''}`;
    } catch {
      return '(connection string)';
    }
  }
  const o = pool.options;
  return `${o.host ?? process.env['PGHOST'] ?? 'localhost'}:${o.port ?? process.env['PGPORT'] ?? 5432}`;
}
