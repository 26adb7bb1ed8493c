/**
 * Where a Redis-limited call's time goes, measured in one process in alternating rounds (a decomposition of
 * the `stores` part's Redis rows): one ioredis PING; EVALSHA of a script that only answers (a two-charge
 * call's keys and arguments); the same through a client with the stores' command timeout, and with its numbers
 * as one argument (ioredis' and the server's cost per argument); the counter script
 * raw; the store's `consume`; `Limiter.charge`; `registry.invoke` in the README shape, without and with the
 * Redis-backed limits. Then the server's own µs per script (INFO commandstats, each script alone).
 * `npx tsx bench/redis-floor.ts [n]`.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { defineTool, PermissionPolicy, ToolRegistry } from '../src/index.js';
import { Limiter, type LimitRule } from '../src/limits/limiter.js';
import { RedisStores } from '../src/stores/redis.js';
import { CONSUME } from '../src/stores/redis-scripts.js';
import type { CounterStore } from '../src/stores/types.js';

const REDIS = process.env['TOOLGATE_BENCH_REDIS'] ?? 'redis://127.0.0.1:6379';
const N = Number(process.argv[2] ?? 20_000);

const LIMITS: readonly LimitRule[] = [
  { name: 'refunds', per: ['caller'], tools: ['refund'], max: 1e12, window: '1h' },
  { name: 'daily', per: ['tenant'], max: 1e12, window: '1d' },
];
const TOOLS = ['search_orders', 'refund'];

function registry(counters: CounterStore | null, prefix: string): ToolRegistry {
  const r = new ToolRegistry(counters ? { limiter: new Limiter({ counters, prefix, limits: LIMITS }) } : {});
  r.register(
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
  r.setPermissionPolicy(
    new PermissionPolicy({ rules: [{ name: 'refunds', tools: ['refund'], result: 'allow' }], fallback: 'deny' }),
  );
  return r;
}
const ARGS = { order: 'A-1042', amount: 20 };
const call = (r: ToolRegistry): Promise<unknown> =>
  r.invoke('refund', ARGS, {
    agent: { name: 'concierge', tools: TOOLS },
    tenant: { id: 'acme', tools: TOOLS },
    caller: { id: 'u-7', scopes: TOOLS },
  });

async function rounds(ops: Record<string, () => Promise<unknown>>): Promise<Record<string, number>> {
  const names = Object.keys(ops);
  const samples = new Map<string, number[]>(names.map((k) => [k, []]));
  for (const k of names) for (let i = 0; i < 1000; i++) await ops[k]!();
  const per = Math.ceil(N / 20);
  for (let round = 0; round < 20; round++)
    for (const k of names) {
      const list = samples.get(k)!;
      const op = ops[k]!;
      for (let i = 0; i < per; i++) {
        const t = process.hrtime.bigint();
        await op();
        list.push(Number(process.hrtime.bigint() - t) / 1000);
      }
    }
  const out: Record<string, number> = {};
  for (const k of names) {
    const list = samples.get(k)!.sort((a, b) => a - b);
    out[k] = list[Math.floor(list.length / 2)]!;
  }
  return out;
}

async function serverUs(client: Redis, run: () => Promise<unknown>): Promise<number> {
  const stats = async (): Promise<{ calls: number; usec: number }> => {
    const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await client.info('commandstats'));
    return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
  };
  const before = await stats();
  for (let i = 0; i < 5000; i++) await run();
  const after = await stats();
  return (after.usec - before.usec) / (after.calls - before.calls);
}

const prefix = `floor_${randomBytes(4).toString('hex')}`;
const plain = new Redis(REDIS, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
const timed = new Redis(REDIS, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 2000 });
await Promise.all([plain, timed].map((c) => new Promise<void>((ok) => c.once('ready', () => ok()))));
const empty = (await plain.script('LOAD', "return '1 -1 0 2 1 1'")) as string;
const counter = (await plain.script('LOAD', CONSUME)) as string;
const args = [1, 2, 1, 1e12, 3_600_000, 1, 1e12, 86_400_000];
const packed = args.join(' ');
const keysOf = (name: string): string[] => [`${prefix}:c:${name}-a`, `${prefix}:c:${name}-b`];
const emptyKeys = keysOf('empty');
const rawKeys = keysOf('raw');
const stores = new RedisStores({ url: REDIS, prefix });
const twoCharges = [
  { key: 's:refunds', cost: 1, limit: 1e12, windowMs: 3_600_000 },
  { key: 's:daily', cost: 1, limit: 1e12, windowMs: 86_400_000 },
];
const limiter = new Limiter({ counters: stores.counters, prefix: 'l', limits: LIMITS });
const subject = { tenant: 'acme', caller: 'u-7', agent: 'concierge', runId: null, tool: 'refund', tags: [] };
const none = registry(null, 'n');
const limited = registry(stores.counters, 'i');

const ops: Record<string, () => Promise<unknown>> = {
  'PING (plain client)': () => plain.ping(),
  'PING (commandTimeout client)': () => timed.ping(),
  'EVALSHA answer-only (plain)': () => plain.evalsha(empty, 2, ...emptyKeys, ...args),
  'EVALSHA answer-only (commandTimeout)': () => timed.evalsha(empty, 2, ...emptyKeys, ...args),
  // The same with its eight numbers sent as one argument: what ioredis (Command's args.flat(), toWritable) and
  // the server's parsing cost per argument.
  'EVALSHA answer-only, ARGV as one string': () => plain.evalsha(empty, 2, ...emptyKeys, packed),
  'EVALSHA counter script (plain)': () => plain.evalsha(counter, 2, ...rawKeys, ...args),
  'store consume, two charges': () => stores.counters.consume(twoCharges),
  'Limiter.charge, two limits': () => limiter.charge(subject),
  'invoke, no limiter': () => call(none),
  'invoke, Redis-backed limits': () => call(limited),
};
const load = (await import('node:os'))
  .loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');
const r = await rounds(ops);
const ping = r['PING (plain client)']!;
console.log(`n=${N} per row, 20 alternating rounds; load ${load}`);
for (const [k, v] of Object.entries(r))
  console.log(`${k.padEnd(40)} ${v.toFixed(1).padStart(7)} µs p50  (+${(v - ping).toFixed(1)})`);
console.log(
  `server µs per script (INFO commandstats): answer-only ${(await serverUs(plain, ops['EVALSHA answer-only (plain)']!)).toFixed(2)}, counter ${(await serverUs(plain, ops['EVALSHA counter script (plain)']!)).toFixed(2)}`,
);
await stores.clear(prefix);
await stores.close();
plain.disconnect();
timed.disconnect();
