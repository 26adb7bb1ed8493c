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

/** The server's clock in epoch ms, in SQL. */
const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/**
 * The migrations the package ships, in order; `migrate()` applies the ones a schema has not seen, under an
 * advisory lock, in one transaction each. `s` is the quoted schema name.
 */
export const POSTGRES_MIGRATIONS: readonly { readonly version: number; sql(s: string): string }[] = Object.freeze([
  {
    version: 1,
    sql: (s: string) => `
      CREATE TABLE ${s}.approvals (id text PRIMARY KEY, tenant text, status text NOT NULL, source text NOT NULL,
        created_at bigint NOT NULL, expires_at bigint NOT NULL, record jsonb NOT NULL, answer jsonb, answered_at bigint);
      CREATE INDEX approvals_tenant_created ON ${s}.approvals (tenant, created_at);
      CREATE INDEX approvals_status_created ON ${s}.approvals (status, created_at);
      CREATE TABLE ${s}.used_nonces (nonce text PRIMARY KEY, until bigint NOT NULL);
      CREATE TABLE ${s}.remembered (key text PRIMARY KEY, answer jsonb NOT NULL, until bigint);
      CREATE TABLE ${s}.calls (key text PRIMARY KEY, owner text NOT NULL, reserved_at bigint NOT NULL,
        lease_until bigint NOT NULL, outcome jsonb, recorded_at bigint);
      CREATE TABLE ${s}.audit (id bigserial PRIMARY KEY, at timestamptz NOT NULL, tenant text, caller text,
        tool text NOT NULL, effect text NOT NULL, stage text NOT NULL, record jsonb NOT NULL);
      CREATE INDEX audit_at ON ${s}.audit (at);
      CREATE INDEX audit_tenant_at ON ${s}.audit (tenant, at);
      CREATE INDEX audit_caller_at ON ${s}.audit (caller, at);
      CREATE INDEX audit_tool_at ON ${s}.audit (tool, at);
    `,
  },
  {
    version: 2,
    sql: (s: string) => `
      CREATE TABLE ${s}.run_tallies (run text PRIMARY KEY, iterations double precision NOT NULL,
        attempts double precision NOT NULL, cost double precision NOT NULL);
    `,
  },
  { version: 3, sql: (s: string) => COUNTERS_SQL(s) },
  {
    version: 4,
    // `toolgate ledger list --unknown`: the rows never recorded, by reservation time, without a scan.
    sql: (s: string) => `CREATE INDEX calls_unrecorded ON ${s}.calls (reserved_at) WHERE recorded_at IS NULL;`,
  },
  { version: 5, sql: (s: string) => COUNTER_BATCH_SQL(s) },
]);

/**
 * Counters (migration 3): a sliding-window log per key — one row per charge in `counter_events`, the running
 * total and the time the last window ends in `counters` — and `consume_counters`, which charges a whole set
 * in one statement (a function call: one round trip, one transaction). It locks the counters' rows in key
 * order (so two workers never deadlock), and each statement after the lock reads what the worker it waited
 * for committed (READ COMMITTED takes a snapshot per statement in a volatile function): of N workers racing
 * for the last slot exactly one gets it. Then it drops the expired charges of each key, checks every charge
 * (two on one key must fit together) and adds all of them or none. Times are the server's clock. Now and then
 * (one call in a thousand) it also deletes up to 100 keys whose last window has passed, with their log.
 * Returns `allowed`, the 0-based index of the charge that did not fit (-1), the ms until it could (-1: never)
 * and the totals (after the charge when allowed; as they stand when refused).
 */
const COUNTERS_SQL = (s: string): string => `
  CREATE TABLE ${s}.counters (key text PRIMARY KEY, total double precision NOT NULL DEFAULT 0,
    until bigint NOT NULL DEFAULT 0);
  CREATE INDEX counters_until ON ${s}.counters (until);
  CREATE TABLE ${s}.counter_events (key text NOT NULL, at bigint NOT NULL, cost double precision NOT NULL);
  CREATE INDEX counter_events_key_at ON ${s}.counter_events (key, at);
  ${CONSUME_COUNTERS_SQL(s, 'CREATE')}
`;

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

/** The function that charges one set (migrations 3 and 5: `CREATE OR REPLACE` there, for schemas at 3). */
const CONSUME_COUNTERS_SQL = (s: string, create: 'CREATE' | 'CREATE OR REPLACE'): string => `
  ${create} FUNCTION ${s}.consume_counters(keys text[], costs double precision[], limits double precision[],
      windows bigint[], OUT allowed boolean, OUT refused integer, OUT retry_ms bigint, OUT used double precision[])
  LANGUAGE plpgsql AS $fn$
  DECLARE
    now_ms bigint := (extract(epoch from clock_timestamp()) * 1000)::bigint;
    n integer := coalesce(array_length(keys, 1), 0);
    distinct_keys integer;
    locked integer;
    base double precision[] := array_fill(0::double precision, ARRAY[n]);
    pending double precision[] := array_fill(0::double precision, ARRAY[n]);
    head integer;
    t double precision;
    need double precision;
    freed double precision;
    e record;
  BEGIN
    used := '{}';
    SELECT count(DISTINCT k) INTO distinct_keys FROM unnest(keys) k;
    -- The rows exist, then are locked in key order. A row deleted by the sweep meanwhile is made again.
    LOOP
      INSERT INTO ${s}.counters (key) SELECT DISTINCT k FROM unnest(keys) k ORDER BY 1 ON CONFLICT (key) DO NOTHING;
      SELECT count(*) INTO locked FROM (SELECT 1 FROM ${s}.counters WHERE key = ANY (keys) ORDER BY key FOR UPDATE) l;
      EXIT WHEN locked = distinct_keys;
    END LOOP;
    FOR i IN 1..n LOOP
      head := array_position(keys, keys[i]);
      IF head = i THEN
        WITH gone AS (DELETE FROM ${s}.counter_events WHERE key = keys[i] AND at <= now_ms - windows[i] RETURNING cost)
        UPDATE ${s}.counters SET total = total - coalesce((SELECT sum(cost) FROM gone), 0) WHERE key = keys[i]
          RETURNING total INTO t;
        -- An empty log is a total of 0 exactly (no drift of summed fractions).
        IF t <> 0 AND NOT EXISTS (SELECT 1 FROM ${s}.counter_events WHERE key = keys[i]) THEN
          UPDATE ${s}.counters SET total = 0 WHERE key = keys[i];
          t := 0;
        END IF;
        base[i] := greatest(t, 0);
      END IF;
      t := base[head] + pending[head];
      IF t + costs[i] > limits[i] THEN
        allowed := false;
        refused := i - 1;
        retry_ms := -1;
        IF costs[i] <= limits[i] THEN
          need := t + costs[i] - limits[i];
          freed := 0;
          FOR e IN SELECT at, cost FROM ${s}.counter_events WHERE key = keys[i] ORDER BY at LOOP
            freed := freed + e.cost;
            IF freed >= need THEN
              retry_ms := greatest(1, e.at + windows[i] - now_ms + 1);
              EXIT;
            END IF;
          END LOOP;
        END IF;
        -- The totals as they stand (this set added nothing), up to the refused charge.
        used := '{}';
        FOR j IN 1..i LOOP
          used := used || (base[array_position(keys, keys[j])]);
        END LOOP;
        RETURN;
      END IF;
      pending[head] := pending[head] + costs[i];
      used := used || (t + costs[i]);
    END LOOP;
    INSERT INTO ${s}.counter_events (key, at, cost)
      SELECT k, now_ms, c FROM unnest(keys, costs) AS u(k, c) WHERE c > 0;
    UPDATE ${s}.counters c SET total = c.total + x.add, until = greatest(c.until, now_ms + x.w)
      FROM (SELECT k, sum(cost) AS add, max(w) AS w FROM unnest(keys, costs, windows) AS u(k, cost, w) GROUP BY k) x
      WHERE c.key = x.k;
    allowed := true;
    refused := -1;
    retry_ms := 0;
    IF random() < 0.001 THEN
      WITH dead AS (
        DELETE FROM ${s}.counters WHERE key IN (
          SELECT key FROM ${s}.counters WHERE until < now_ms AND NOT (key = ANY (keys)) LIMIT 100 FOR UPDATE SKIP LOCKED)
        RETURNING key)
      DELETE FROM ${s}.counter_events ev USING dead WHERE ev.key = dead.key;
    END IF;
  END
  $fn$;
`;

/**
 * Counters, coalesced (migration 5; it also replaces `consume_counters`, whose refusal of a set of several
 * charges listed the totals of the charges before the refused one twice): the concurrent charge sets of one process decided by one function call,
 * in order, each all or nothing (by `consume_counters`), after every counter of the batch is locked in key
 * order — so one transaction and one commit serve many decisions, and two workers' batches never deadlock.
 * `sizes` cuts the charge arrays into sets. Returns one row per set, in order.
 */
const COUNTER_BATCH_SQL = (s: string): string => `
  ${CONSUME_COUNTERS_SQL(s, 'CREATE OR REPLACE')}
  CREATE FUNCTION ${s}.consume_counter_batch(keys text[], costs double precision[], limits double precision[],
      windows bigint[], sizes integer[])
    RETURNS TABLE (allowed boolean, refused integer, retry_ms bigint, used double precision[])
  LANGUAGE plpgsql AS $fn$
  DECLARE
    distinct_keys integer;
    locked integer;
    head integer := 1;
    size integer;
    verdict record;
  BEGIN
    SELECT count(DISTINCT k) INTO distinct_keys FROM unnest(keys) k;
    LOOP
      INSERT INTO ${s}.counters (key) SELECT DISTINCT k FROM unnest(keys) k ORDER BY 1 ON CONFLICT (key) DO NOTHING;
      SELECT count(*) INTO locked FROM (SELECT 1 FROM ${s}.counters WHERE key = ANY (keys) ORDER BY key FOR UPDATE) l;
      EXIT WHEN locked = distinct_keys;
    END LOOP;
    FOREACH size IN ARRAY sizes LOOP
      SELECT * INTO verdict FROM ${s}.consume_counters(keys[head:head + size - 1], costs[head:head + size - 1],
        limits[head:head + size - 1], windows[head:head + size - 1]);
      allowed := verdict.allowed;
      refused := verdict.refused;
      retry_ms := verdict.retry_ms;
      used := verdict.used;
      RETURN NEXT;
      head := head + size;
    END LOOP;
  END
  $fn$;
`;

/** The most records one INSERT of the audit queue writes. */
const AUDIT_BATCH = 500;

interface QueuedRecord {
  readonly record: AuditRecord;
  readonly json: string;
  readonly done: () => void;
  readonly failed: (error: unknown) => void;
}

/** The audit's write queue: bounded, written in order by one batch at a time, drained by `close`. */
class AuditQueue {
  readonly #insert: (records: readonly QueuedRecord[]) => Promise<void>;
  readonly #limit: number;
  #queued: QueuedRecord[] = [];
  #draining: Promise<void> | null = null;
  #closed = false;

  constructor(insert: (records: readonly QueuedRecord[]) => Promise<void>, limit: number) {
    this.#insert = insert;
    this.#limit = limit;
  }

  write(record: AuditRecord): Promise<void> {
    if (this.#closed)
      return Promise.reject(new Error('the PostgreSQL audit sink is closed: the record is not written'));
    let json: string;
    try {
      // Checked now, so that one bad record cannot fail the batch it would be written with.
      if (typeof record?.decision !== 'object' || record.decision === null)
        throw new TypeError(`"decision" is ${describe(record?.decision)}`);
      if (!Number.isFinite(Date.parse(record.time))) throw new TypeError(`"time" is ${describe(record.time)}`);
      json = JSON.stringify(record);
    } catch (error) {
      return Promise.reject(
        new TypeError(
          `an audit record that cannot be written: ${error instanceof Error ? error.message : String(error)}`,
        ),
      );
    }
    if (this.#queued.length >= this.#limit)
      return Promise.reject(
        new Error(`the PostgreSQL audit queue is full (${this.#limit} records waiting): the record is dropped`),
      );
    return new Promise<void>((done, failed) => {
      this.#queued.push({ record, json, done, failed });
      // Started a microtask later, so that the records of one synchronous burst share the first batch.
      this.#draining ??= Promise.resolve().then(() => this.#drain());
    });
  }

  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
  }

  async #drain(): Promise<void> {
    while (this.#queued.length > 0) {
      const batch = this.#queued.splice(0, AUDIT_BATCH);
      try {
        await this.#insert(batch);
        for (const r of batch) r.done();
      } catch (error) {
        for (const r of batch) r.failed(error);
      }
    }
    this.#draining = null;
  }
}

/** The columns of a batch of audit records, as the arrays the INSERT unnests. */
function columnsOf(batch: readonly QueuedRecord[]): unknown[][] {
  const columns: unknown[][] = [[], [], [], [], [], [], []];
  for (const { record, json } of batch) {
    const d = record.decision;
    columns[0]!.push(record.time);
    columns[1]!.push(d.tenant);
    columns[2]!.push(record.caller);
    columns[3]!.push(d.canonical);
    columns[4]!.push(d.effect);
    columns[5]!.push(d.stage);
    columns[6]!.push(json);
  }
  return columns;
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

function approvalsIn(
  q: (text: string, values?: unknown[]) => Promise<pg.QueryResult<Row>>,
  s: string,
  schema: string,
  pool: pg.Pool,
): ApprovalStore {
  const channel = `${schema}_approvals`;
  const listeners = new Set<(id: string) => void>();
  let listening: Promise<pg.PoolClient> | null = null;
  const tell = (id: string): void => {
    for (const listener of listeners) {
      try {
        listener(id);
      } catch {
        // A listener's failure is its own.
      }
    }
  };
  const notify = (id: string): Promise<unknown> => q(`SELECT pg_notify($1, $2)`, [channel, id]);
  return {
    async put(pending: PendingRecord): Promise<void> {
      checkPending(pending);
      const { status, answer, answeredAt, createdAt, expiresAt, ...rest } = pending;
      const r = await q(
        `INSERT INTO ${s}.approvals (id, tenant, status, source, created_at, expires_at, record, answer, answered_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
        [
          pending.id,
          pending.tenant,
          status,
          pending.source,
          createdAt,
          expiresAt,
          JSON.stringify(rest),
          answer ? JSON.stringify(answer) : null,
          answeredAt,
        ],
      );
      if (r.rowCount === 1) await notify(pending.id);
    },
    async get(id: string): Promise<PendingRecord | undefined> {
      const r = await q(`SELECT *, ${NOW} AS now FROM ${s}.approvals WHERE id = $1`, [id]);
      const row = r.rows[0];
      return row ? pendingOf(row, Number(row['now'])) : undefined;
    },
    async list(filter: PendingFilter = {}): Promise<PendingRecord[]> {
      const values: unknown[] = [];
      const where: string[] = [];
      if (filter.tenant !== undefined) {
        values.push(filter.tenant);
        where.push(`tenant = $${values.length}`);
      }
      if (filter.status === 'pending') where.push(`status = 'pending' AND expires_at >= ${NOW}`);
      else if (filter.status === 'expired') where.push(`status = 'pending' AND expires_at < ${NOW}`);
      else if (filter.status === 'answered') where.push(`status = 'answered'`);
      const r = await q(
        `SELECT *, ${NOW} AS now FROM ${s}.approvals${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at, id`,
        values,
      );
      const out: PendingRecord[] = [];
      for (const row of r.rows) {
        const record = pendingOf(row, Number(row['now']));
        if (record) out.push(record);
      }
      return out;
    },
    async answer(id: string, answer: Answer): Promise<boolean> {
      checkAnswer(answer);
      const r = await q(
        `UPDATE ${s}.approvals SET status = 'answered', answer = $2, answered_at = ${NOW}
         WHERE id = $1 AND status = 'pending' AND expires_at >= ${NOW}`,
        [id, JSON.stringify(answer)],
      );
      if (r.rowCount !== 1) return false;
      await notify(id);
      return true;
    },
    watch(listener: (id: string) => void): () => void {
      listeners.add(listener);
      listening ??= (async () => {
        const client = await pool.connect();
        client.on('notification', (message) => {
          if (message.channel === channel && message.payload) tell(message.payload);
        });
        client.on('error', () => undefined);
        await client.query(`LISTEN "${channel}"`);
        return client;
      })();
      listening.catch((error: unknown) => {
        process.emitWarning(
          `toolgate: cannot LISTEN for approvals: ${error instanceof Error ? error.message : String(error)}`,
          {
            code: 'TOOLGATE_STORE',
          },
        );
      });
      return () => {
        listeners.delete(listener);
        if (listeners.size > 0 || !listening) return;
        const done = listening;
        listening = null;
        void done.then(
          async (client) => {
            await client.query(`UNLISTEN "${channel}"`).catch(() => undefined);
            client.release();
          },
          () => undefined,
        );
      };
    },
  };
}
