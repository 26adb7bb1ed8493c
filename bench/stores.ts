/**
 * What the shared stores cost, against the real servers (PostgreSQL 127.0.0.1:5432 db test, Redis
 * 127.0.0.1:6379), each figure beside its floors measured in the same run through the same drivers: one Redis
 * `PING` round trip, one `EVALSHA` of a script that only answers (with a charge's keys, arguments and answer
 * shape: what any one-script limit costs before it does anything), one PostgreSQL `SELECT 1`, and one
 * PostgreSQL one-row `UPDATE` committed on its own (a durable write: what any exact shared counter there pays). Part `stores` of `npm run bench`; alone: `npx tsx
 * bench/stores.ts [--quick]` prints a Markdown table for docs/stores.md.
 *
 * - per call, sequentially (true per-call percentiles): the Redis counter store's `consume` of two charges
 *   alone, and its script called raw through the floors' client (what the script costs on the server, apart
 *   from the store's client side), with the server's own time per script call (INFO commandstats, around that run); `Limiter.charge` alone (one subject reused: the
 *   limiter and its store only), and `registry.invoke` in the README's shape — a new context per request with
 *   the agent's tools, the tenant's plan and the caller's scopes as plain arrays, and two limits (refunds per
 *   caller per hour, calls per tenant per day), charged together in one script — with no limiter, in-memory,
 *   Redis and PostgreSQL counters;
 * - ledger: one reserve → record cycle (what an executed runner call adds) in memory, SQLite, PostgreSQL;
 * - throughput: 4 worker processes, each with 64 requests in flight (a server's concurrent requests), all on
 *   one shared counter (Redis, PostgreSQL) or each on its own (memory), for a few seconds; the shared counter
 *   is read afterwards and must hold exactly the number of decisions made (`exact`).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { Redis } from 'ioredis';
import { defineTool, PermissionPolicy, ToolRegistry } from '../src/index.js';
import { Limiter, type LimitRule } from '../src/limits/limiter.js';
import { MemoryCounterStore, MemoryLedger } from '../src/stores/memory.js';
import { PostgresStores } from '../src/stores/postgres.js';
import { RedisStores } from '../src/stores/redis.js';
import { CONSUME } from '../src/stores/redis-scripts.js';
import { SqliteStores } from '../src/stores/sqlite.js';
import type { CounterStore, Ledger } from '../src/stores/types.js';

const PG = process.env['TOOLGATE_BENCH_PG'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS = process.env['TOOLGATE_BENCH_REDIS'] ?? 'redis://127.0.0.1:6379';

/** Microseconds per call. */
export interface PerCall {
  readonly p50: number;
  readonly p99: number;
  readonly n: number;
}

/** Decisions per second of several worker processes on one counter (or each on its own). */
export interface Throughput {
  readonly processes: number;
  readonly inFlight: number;
  readonly seconds: number;
  readonly decisions: number;
  readonly perSecond: number;
  /** The shared counter read afterwards holds exactly `decisions` (null: each process had its own). */
  readonly exact: boolean | null;
}

export interface StoresResult {
  readonly node: string;
  readonly floors: {
    readonly redisPing: PerCall;
    /** EVALSHA of a script that only answers, with a two-charge call's keys, arguments and answer. */
    readonly redisScript: PerCall;
    readonly pgSelect: PerCall;
    /** A one-row UPDATE in its own transaction (a durable commit). */
    readonly pgWrite: PerCall;
  };
  /**
   * The Redis counter store alone (two charges); the counter script called raw with the same keys and
   * arguments (the plain client; its difference to `floors.redisScript` is the script's work on the server);
   * the server's µs per counter script (INFO commandstats, a mean).
   */
  readonly consume: { readonly redis: PerCall; readonly redisRaw: PerCall; readonly redisServerUs: number | null };
  readonly charge: { readonly redis: PerCall; readonly postgres: PerCall };
  readonly invoke: {
    readonly none: PerCall;
    readonly memory: PerCall;
    readonly redis: PerCall;
    readonly postgres: PerCall;
  };
  readonly ledger: { readonly memory: PerCall; readonly sqlite: PerCall; readonly postgres: PerCall };
  readonly throughput: { readonly memory: Throughput; readonly redis: Throughput; readonly postgres: Throughput };
}

export interface StoresOptions {
  /** Fewer calls and shorter throughput runs (a smoke run). @default false */
  readonly quick?: boolean;
  readonly log?: (line: string) => void;
}

/** The README's limits: refunds per caller per hour and all calls per tenant per day (never full here). */
const LIMITS: readonly LimitRule[] = [
  { name: 'refunds', per: ['caller'], tools: ['refund'], max: 1e12, window: '1h' },
  { name: 'daily', per: ['tenant'], max: 1e12, window: '1d' },
];
const TOOLS = ['search_orders', 'refund'];
const plan = { tools: [...TOOLS] };
const agent = { name: 'concierge', tools: [...TOOLS] };
const user = { id: 'u-7', toolScopes: [...TOOLS] };
const ARGS = { order: 'A-1042', amount: 20 };

/** The README quick start's registry (JSON Schema parameters), with `counters` behind its limits. */
function readmeRegistry(counters: CounterStore | null, prefix: string): ToolRegistry {
  const registry = new ToolRegistry(counters ? { limiter: new Limiter({ counters, prefix, limits: LIMITS }) } : {});
  registry.register(
    defineTool({
      name: 'search_orders',
      parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      execute: async ({ query }) => [`A-1042 (${String(query)})`],
    }),
  );
  registry.register(
    defineTool({
      name: 'refund',
      parameters: {
        type: 'object',
        properties: { order: { type: 'string' }, amount: { type: 'number' } },
        required: ['order', 'amount'],
      },
      execute: async ({ order, amount }) => `refunded ${String(amount)} EUR on ${String(order)}`,
    }),
  );
  registry.setPermissionPolicy(
    new PermissionPolicy({ rules: [{ name: 'refunds', tools: ['refund'], result: 'allow' }], fallback: 'deny' }),
  );
  return registry;
}

/** One request as a server makes it: a new context object around the README's three layers. */
function readmeCall(registry: ToolRegistry): Promise<unknown> {
  return registry.invoke('refund', ARGS, {
    agent,
    tenant: { id: 'acme', tools: plan.tools },
    caller: { id: user.id, scopes: user.toolScopes },
  });
}

async function perCall(n: number, op: (i: number) => Promise<unknown>): Promise<PerCall> {
  for (let i = 0; i < Math.min(500, n); i++) await op(-1 - i); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await op(i);
    samples.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  samples.sort((a, b) => a - b);
  return { p50: samples[Math.floor(n * 0.5)]!, p99: samples[Math.floor(n * 0.99)]!, n };
}

/**
 * Per-call percentiles of several operations measured in alternating rounds (10 rounds of n/10 calls each,
 * after 500 calls of warm-up each).
 */
async function rounds<K extends string>(
  n: number,
  ops: Record<K, () => Promise<unknown>>,
): Promise<Record<K, PerCall>> {
  const names = Object.keys(ops) as K[];
  const samples = new Map<K, number[]>(names.map((k) => [k, []]));
  for (const k of names) for (let i = 0; i < Math.min(500, n); i++) await ops[k]();
  const per = Math.ceil(n / 10);
  for (let round = 0; round < 10; round++)
    for (const k of names) {
      const list = samples.get(k)!;
      for (let i = 0; i < per; i++) {
        const t = process.hrtime.bigint();
        await ops[k]();
        list.push(Number(process.hrtime.bigint() - t) / 1000);
      }
    }
  const out = {} as Record<K, PerCall>;
  for (const k of names) {
    const list = samples.get(k)!.sort((a, b) => a - b);
    out[k] = { p50: list[Math.floor(list.length * 0.5)]!, p99: list[Math.floor(list.length * 0.99)]!, n: list.length };
  }
  return out;
}

type WorkerKind = 'memory' | 'redis' | 'postgres';

/** The workers' limiter prefix: their counters are apart from the per-call rows'. */
const THROUGHPUT_PREFIX = 'tp';
/** The tenant's daily counter of the throughput runs: every decision takes one slot of it. */
const DAILY = `${THROUGHPUT_PREFIX}:daily:tenant=acme`;

/** A worker process: `inFlight` loops of README-shaped calls for `ms`, then prints how many it made. */
async function worker(kind: WorkerKind, prefix: string, ms: number, inFlight: number): Promise<void> {
  const redis = kind === 'redis' ? new RedisStores({ url: REDIS, prefix }) : null;
  const pgStores = kind === 'postgres' ? new PostgresStores({ connectionString: PG, schema: prefix }) : null;
  const counters = redis?.counters ?? pgStores?.counters ?? new MemoryCounterStore();
  const registry = readmeRegistry(counters, THROUGHPUT_PREFIX);
  let n = 0;
  let failed = 0;
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (Date.now() < end) {
        const result = (await readmeCall(registry)) as { status: string };
        if (result.status === 'ok') n++;
        else failed++;
      }
    }),
  );
  console.log(JSON.stringify({ n, failed }));
  await redis?.close();
  await pgStores?.close();
}

/** The server's count of EVALSHA calls and their µs so far (INFO commandstats). */
async function evalshaStats(client: Redis): Promise<{ calls: number; usec: number }> {
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await client.info('commandstats'));
  return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
}

const here = fileURLToPath(import.meta.url);
const runFile = promisify(execFile);

async function throughput(
  kind: WorkerKind,
  options: { processes: number; inFlight: number; ms: number; prefix: string; check?: () => Promise<number> },
): Promise<Throughput> {
  const loader = here.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const outs = await Promise.all(
    Array.from({ length: options.processes }, () =>
      runFile(process.execPath, [
        ...loader,
        here,
        '--stores-worker',
        kind,
        options.prefix,
        String(options.ms),
        String(options.inFlight),
      ]),
    ),
  );
  let decisions = 0;
  for (const o of outs) {
    const r = JSON.parse(o.stdout.trim().split('\n').at(-1)!) as { n: number; failed: number };
    if (r.failed > 0) throw new Error(`a ${kind} worker had ${r.failed} calls refused (a store error?)`);
    decisions += r.n;
  }
  const counted = options.check ? await options.check() : null;
  return {
    processes: options.processes,
    inFlight: options.inFlight,
    seconds: options.ms / 1000,
    decisions,
    perSecond: decisions / (options.ms / 1000),
    // Every decision charged both limits; the tenant's daily counter holds one slot per decision.
    exact: counted === null ? null : counted === decisions,
  };
}

/** Measures everything (see the file's comment). */
export async function benchStores(options: StoresOptions = {}): Promise<StoresResult> {
  const log = options.log ?? (() => undefined);
  const N = options.quick ? 500 : 4000;
  const id = randomBytes(4).toString('hex');
  const prefix = `bench_${id}`;

  // Every row of a chain (Redis: the floors, the store, the Limiter, invoke; PostgreSQL likewise) is measured
  // in alternating rounds, so a load that changes during the run moves them alike and their differences (the
  // breakdown) hold. The floors use the drivers with the options the stores use.
  const ping = new Redis(REDIS, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  await new Promise<void>((ok) => ping.once('ready', () => ok()));
  const pool = new pg.Pool({ connectionString: PG });
  // A charge of two limits sends two keys and eight numbers and gets one string back.
  const answer = (await ping.script('LOAD', "return '1 -1 0 2 1 1'")) as string;
  const counterScript = (await ping.script('LOAD', CONSUME)) as string;
  const rawKeys = [`${prefix}:c:raw-a`, `${prefix}:c:raw-b`];
  const scriptKeys = [`${prefix}:c:floor-a`, `${prefix}:c:floor-b`];
  const table = `${prefix}_floor`;
  await pool.query(`CREATE TABLE ${table} (k int PRIMARY KEY, v bigint NOT NULL)`);
  await pool.query(`INSERT INTO ${table} VALUES (1, 0)`);

  const redis = new RedisStores({ url: REDIS, prefix });
  const pgStores = new PostgresStores({ connectionString: PG, schema: prefix });
  await pgStores.migrate();
  const subject = { tenant: 'acme', caller: 'u-7', agent: 'concierge', runId: null, tool: 'refund', tags: [] };
  const twoCharges = LIMITS.map((l, i) => ({
    key: `${prefix}s:${l.name}`,
    cost: 1,
    limit: 1e12,
    windowMs: i === 0 ? 3_600_000 : 86_400_000,
  }));
  const redisLimiter = new Limiter({ counters: redis.counters, prefix: `${prefix}c`, limits: LIMITS });
  const pgLimiter = new Limiter({ counters: pgStores.counters, prefix: `${prefix}c`, limits: LIMITS });
  const registries = {
    none: readmeRegistry(null, prefix),
    memory: readmeRegistry(new MemoryCounterStore(), prefix),
    redis: readmeRegistry(redis.counters, prefix),
    postgres: readmeRegistry(pgStores.counters, prefix),
  };
  // The server's own time per counter script (INFO commandstats around calls of the store alone); another
  // client's scripts meanwhile would be in it too.
  for (let i = 0; i < 500; i++) await redis.counters.consume(twoCharges);
  const before = await evalshaStats(ping);
  for (let i = 0; i < N; i++) await redis.counters.consume(twoCharges);
  const after = await evalshaStats(ping);
  const redisServerUs = after.calls - before.calls === N ? (after.usec - before.usec) / N : null;
  const r = await rounds(N, {
    redisPing: () => ping.ping(),
    redisScript: () => ping.evalsha(answer, 2, ...scriptKeys, 1, 2, 1, 1e12, 3_600_000, 1, 1e12, 86_400_000),
    consumeRaw: () => ping.evalsha(counterScript, 2, ...rawKeys, 1, 2, 1, 1e12, 3_600_000, 1, 1e12, 86_400_000),
    consume: () => redis.counters.consume(twoCharges),
    charge: () => redisLimiter.charge(subject),
    none: () => readmeCall(registries.none),
    memory: () => readmeCall(registries.memory),
    invoke: () => readmeCall(registries.redis),
  });
  ping.disconnect();
  const p = await rounds(Math.min(N, 1500), {
    pgSelect: () => pool.query('SELECT 1'),
    pgWrite: () => pool.query(`UPDATE ${table} SET v = v + 1 WHERE k = 1`),
    charge: () => pgLimiter.charge(subject),
    invoke: () => readmeCall(registries.postgres),
  });
  await pool.query(`DROP TABLE ${table}`);
  await pool.end();
  const floors = { redisPing: r.redisPing, redisScript: r.redisScript, pgSelect: p.pgSelect, pgWrite: p.pgWrite };
  const charge = { redis: r.charge, postgres: p.charge };
  const invoke = { none: r.none, memory: r.memory, redis: r.invoke, postgres: p.invoke };
  log(
    `stores: floors Redis PING ${floors.redisPing.p50.toFixed(1)} µs, EVALSHA ${floors.redisScript.p50.toFixed(1)} µs, ` +
      `PostgreSQL SELECT 1 ${floors.pgSelect.p50.toFixed(1)} µs, UPDATE ${floors.pgWrite.p50.toFixed(1)} µs`,
  );
  log(`stores: invoke with a Redis-backed limit ${invoke.redis.p50.toFixed(1)} µs p50`);

  const sqlite = new SqliteStores();
  const ledgerOf: [keyof StoresResult['ledger'], Ledger][] = [
    ['memory', new MemoryLedger()],
    ['sqlite', sqlite.ledger],
    ['postgres', pgStores.ledger],
  ];
  const ledger: Partial<Record<keyof StoresResult['ledger'], PerCall>> = {};
  for (const [name, l] of ledgerOf)
    ledger[name] = await perCall(name === 'postgres' ? Math.min(N, 1000) : N, async (i) => {
      const key = `k${i}`;
      await l.reserve(key, 'w', 60_000);
      await l.record(key, 'w', { content: 'ok', isError: false });
    });
  sqlite.close();

  const ms = options.quick ? 1500 : 5000;
  const shape = { processes: 4, inFlight: 64, ms };
  const memory = await throughput('memory', { ...shape, prefix });
  const shared = new RedisStores({ url: REDIS, prefix: `${prefix}t` });
  const redisRate = await throughput('redis', {
    ...shape,
    prefix: `${prefix}t`,
    check: () => shared.counters.peek(DAILY, 86_400_000),
  });
  log(`stores: 4 processes on one Redis counter ${Math.round(redisRate.perSecond)} decisions/s`);
  const pgRate = await throughput('postgres', {
    ...shape,
    prefix,
    check: () => pgStores.counters.peek(DAILY, 86_400_000),
  });
  await shared.clear(`${prefix}t`);
  await shared.close();
  await redis.clear(prefix);
  await redis.close();
  await pgStores.dropSchema();
  await pgStores.close();
  return {
    node: process.version,
    floors,
    consume: { redis: r.consume, redisRaw: r.consumeRaw, redisServerUs },
    charge,
    invoke,
    ledger: ledger as StoresResult['ledger'],
    throughput: { memory, redis: redisRate, postgres: pgRate },
  };
}

const us = (v: number): string => (v >= 1000 ? `${(v / 1000).toFixed(2)} ms` : `${v.toFixed(1)} µs`);

/** The Markdown tables of docs/stores.md. */
export function storesTables(r: StoresResult): string {
  const row = (name: string, p: PerCall, floor?: PerCall): string =>
    `| ${name} | ${us(p.p50)} | ${us(p.p99)} | ${floor ? `${(p.p50 / floor.p50).toFixed(2)}×` : ''} |`;
  const rate = (name: string, t: Throughput): string =>
    `| ${name} | ${Math.round(t.perSecond).toLocaleString('en')} | ${t.exact === null ? 'own counters' : t.exact ? 'exact' : 'NOT EXACT'} |`;
  return [
    `Node ${r.node}; sequential calls, the rows of one chain (Redis, PostgreSQL) in 10 alternating rounds, after 500 of warm-up each.`,
    '',
    '| per call | p50 | p99 | × floor (p50) |',
    '| --- | --- | --- | --- |',
    row('floor: Redis `PING` round trip (ioredis)', r.floors.redisPing),
    row(
      "floor: Redis `EVALSHA` of a script that only answers, a charge's keys and arguments",
      r.floors.redisScript,
      r.floors.redisPing,
    ),
    row('floor: PostgreSQL `SELECT 1` round trip (pg)', r.floors.pgSelect),
    row(
      'floor: PostgreSQL one-row `UPDATE`, its own transaction (a durable commit)',
      r.floors.pgWrite,
      r.floors.pgSelect,
    ),
    row(
      'Redis counter script called raw, two charges (its keys and arguments)',
      r.consume.redisRaw,
      r.floors.redisPing,
    ),
    row('Redis counter store `consume`, two charges (one script)', r.consume.redis, r.floors.redisPing),
    row('`Limiter.charge`, two limits, Redis (one script)', r.charge.redis, r.floors.redisPing),
    row('`Limiter.charge`, two limits, PostgreSQL (one statement)', r.charge.postgres, r.floors.pgWrite),
    row('invoke, README shape, no limiter', r.invoke.none),
    row('invoke, README shape, in-memory limits', r.invoke.memory),
    row('invoke, README shape, Redis-backed limits', r.invoke.redis, r.floors.redisPing),
    row('invoke, README shape, PostgreSQL-backed limits', r.invoke.postgres, r.floors.pgWrite),
    row('ledger reserve → record, in-memory', r.ledger.memory),
    row('ledger reserve → record, SQLite (in memory)', r.ledger.sqlite),
    row('ledger reserve → record, PostgreSQL', r.ledger.postgres, r.floors.pgWrite),
    '',
    `Where a Redis-limited call's time goes (p50 differences of the rows above): the round trip (PING) ${us(r.floors.redisPing.p50)}; ` +
      `a script call with a charge's keys and arguments +${us(r.floors.redisScript.p50 - r.floors.redisPing.p50)}; ` +
      `the counter script's work on the server +${us(r.consume.redisRaw.p50 - r.floors.redisScript.p50)}` +
      `${r.consume.redisServerUs === null ? '' : ` (INFO commandstats, a mean: ${us(r.consume.redisServerUs)} per counter script)`}; ` +
      `the store's client side (its JavaScript, ioredis' command timer) +${us(r.consume.redis.p50 - r.consume.redisRaw.p50)}; ` +
      `the Limiter +${us(r.charge.redis.p50 - r.consume.redis.p50)}; ` +
      `the gate's invoke around it ${us(r.invoke.redis.p50 - r.charge.redis.p50)} (no limiter: ${us(r.invoke.none.p50)}).`,
    '',
    `| ${r.throughput.redis.processes} worker processes × ${r.throughput.redis.inFlight} requests in flight, ${r.throughput.redis.seconds} s | decisions / s | total |`,
    '| --- | --- | --- |',
    rate('in-memory limits (each process its own counters)', r.throughput.memory),
    rate('Redis-backed limits (one shared counter)', r.throughput.redis),
    rate('PostgreSQL-backed limits (one shared counter)', r.throughput.postgres),
  ].join('\n');
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--stores-worker');
  if (at >= 0) {
    const [kind, prefix, ms, inFlight] = process.argv.slice(at + 1);
    return worker(kind as WorkerKind, prefix!, Number(ms), Number(inFlight));
  }
  const result = await benchStores({
    quick: process.argv.includes('--quick'),
    log: (line) => void process.stderr.write(`${line}\n`),
  });
  console.log(storesTables(result));
}

// Run as a script (a worker of the throughput runs, or alone): not when run.ts imports it.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === here) await main();
