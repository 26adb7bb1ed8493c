/**
 * What the shared stores cost per call, against the real servers (PostgreSQL 127.0.0.1:5432 db test, Redis
 * 127.0.0.1:6379): `npx tsx bench/stores.ts` (or `-- --quick`). Prints a Markdown table for docs/stores.md.
 *
 * - limit: one `registry.invoke` of a trivial tool with no limiter, an in-memory Limiter, a Redis-backed one;
 * - ledger: one reserve → record cycle (what an executed runner call adds) in memory, SQLite, PostgreSQL;
 * - throughput: decisions per second of 4 worker processes, each invoking through a Redis-backed Limiter
 *   (one shared counter) and, for comparison, through an in-memory one.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { defineTool, ToolRegistry } from '../src/index.js';
import { Limiter } from '../src/limits/limiter.js';
import { MemoryCounterStore, MemoryLedger } from '../src/stores/memory.js';
import { PostgresStores } from '../src/stores/postgres.js';
import { RedisStores } from '../src/stores/redis.js';
import { SqliteStores } from '../src/stores/sqlite.js';
import type { CounterStore, Ledger } from '../src/stores/types.js';

const PG = process.env['TOOLGATE_BENCH_PG'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS = process.env['TOOLGATE_BENCH_REDIS'] ?? 'redis://127.0.0.1:6379';
const quick = process.argv.includes('--quick');
const N = quick ? 300 : 3000;

function registry(counters: CounterStore | null): ToolRegistry {
  const r = new ToolRegistry();
  r.register(
    defineTool({
      name: 'lookup',
      description: 'Look up an order',
      parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
      execute: (args) => `order ${String(args['order'])}: shipped`,
    }),
  );
  if (counters)
    r.setLimiter(
      new Limiter({
        counters,
        prefix: `bench${randomBytes(4).toString('hex')}`,
        limits: [{ name: 'calls', per: ['tenant'], max: 1e12, window: '1h' }],
      }),
    );
  return r;
}

function percentiles(samples: number[]): { p50: number; p99: number } {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: s[Math.floor(s.length * 0.5)]!, p99: s[Math.floor(s.length * 0.99)]! };
}

async function time(n: number, op: (i: number) => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < Math.min(200, n); i++) await op(-1 - i); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await op(i);
    samples.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  return percentiles(samples);
}

const us = (v: number): string => (v >= 1000 ? `${(v / 1000).toFixed(2)} ms` : `${v.toFixed(1)} µs`);

async function worker(kind: 'memory' | 'redis', prefix: string, ms: number): Promise<void> {
  const redis = kind === 'redis' ? new RedisStores({ url: REDIS, prefix }) : null;
  const r = registry(redis ? redis.counters : new MemoryCounterStore());
  const ctx = { tenant: { id: 'acme' } };
  const end = Date.now() + ms;
  let n = 0;
  while (Date.now() < end) {
    await r.invoke('lookup', { order: 'A1' }, ctx);
    n++;
  }
  console.log(JSON.stringify({ n }));
  await redis?.close();
}

async function throughput(kind: 'memory' | 'redis', processes: number, ms: number): Promise<number> {
  const prefix = `bench_${randomBytes(4).toString('hex')}`;
  const run = promisify(execFile);
  const outs = await Promise.all(
    Array.from({ length: processes }, () =>
      run(process.execPath, [
        '--import',
        'tsx',
        new URL(import.meta.url).pathname,
        '--worker',
        kind,
        prefix,
        String(ms),
      ]),
    ),
  );
  const total = outs.reduce((sum, o) => sum + (JSON.parse(o.stdout.trim()) as { n: number }).n, 0);
  if (kind === 'redis') {
    const r = new RedisStores({ url: REDIS, prefix });
    await r.clear(prefix);
    await r.close();
  }
  return total / (ms / 1000);
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--worker');
  if (at >= 0)
    return worker(process.argv[at + 1] as 'memory' | 'redis', process.argv[at + 2]!, Number(process.argv[at + 3]));

  const rows: string[] = [];
  const ctx = { tenant: { id: 'acme' } };
  const prefix = `bench_${randomBytes(4).toString('hex')}`;
  const redis = new RedisStores({ url: REDIS, prefix });
  const none = registry(null);
  const mem = registry(new MemoryCounterStore());
  const red = registry(redis.counters);
  const plain = await time(N, () => none.invoke('lookup', { order: 'A1' }, ctx));
  const memory = await time(N, () => mem.invoke('lookup', { order: 'A1' }, ctx));
  const remote = await time(N, () => red.invoke('lookup', { order: 'A1' }, ctx));
  rows.push(`| invoke, no limiter | ${us(plain.p50)} | ${us(plain.p99)} |`);
  rows.push(`| invoke, in-memory limit | ${us(memory.p50)} | ${us(memory.p99)} |`);
  rows.push(`| invoke, Redis-backed limit | ${us(remote.p50)} | ${us(remote.p99)} |`);

  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const pg = new PostgresStores({ connectionString: PG, schema });
  await pg.migrate();
  const sqlite = new SqliteStores();
  const ledgers: [string, Ledger][] = [
    ['in-memory', new MemoryLedger()],
    ['SQLite (in memory)', sqlite.ledger],
    ['PostgreSQL', pg.ledger],
  ];
  for (const [name, ledger] of ledgers) {
    const p = await time(N, async (i) => {
      const key = `k${i}`;
      await ledger.reserve(key, 'w', 60_000);
      await ledger.record(key, 'w', { content: 'ok', isError: false });
    });
    rows.push(`| ledger reserve → record, ${name} | ${us(p.p50)} | ${us(p.p99)} |`);
  }
  await pg.dropSchema();
  await pg.close();
  sqlite.close();
  await redis.clear(prefix);
  await redis.close();

  const ms = quick ? 1000 : 5000;
  const memRate = await throughput('memory', 4, ms);
  const redisRate = await throughput('redis', 4, ms);
  console.log(`N = ${N} sequential calls per row (after 200 warm-up); Node ${process.version}\n`);
  console.log('| per call | p50 | p99 |\n| --- | --- | --- |');
  console.log(rows.join('\n'));
  console.log(`\n| 4 worker processes, ${ms / 1000} s | decisions / s |\n| --- | --- |`);
  console.log(`| in-memory limit (each process its own counter) | ${Math.round(memRate).toLocaleString('en')} |`);
  console.log(`| Redis-backed limit (one shared counter) | ${Math.round(redisRate).toLocaleString('en')} |`);
}

await main();
