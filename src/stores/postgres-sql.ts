/**
 * The SQL of the PostgreSQL stores (`toolgate/postgres`): the shipped migrations, in order, and the counter
 * functions they create; the server's clock as SQL. Internal: `POSTGRES_MIGRATIONS` is published by
 * `stores/postgres.ts`.
 */

/** The server's clock in epoch ms, in SQL. */
export const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

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
