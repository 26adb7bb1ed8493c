/**
 * The counter script made cheaper per call (issue 25 target 4) decides, answers and writes exactly as the first
 * version did, and as the second (the first cut): all three run the same random batches of charge sets, each
 * on its own copy of the keys, on one fake server clock (their `TIME` read replaced by a key, so all see the
 * same `now`, stepping forward and at times back), and after every batch their replies and every key (type,
 * the whole list, when it expires) are equal. The batches cover refusals (and their retry times, past the
 * first 100 entries), costs of 0, two charges on one counter, heads that leave the window (one entry, many,
 * all), sorted sets of the earlier layout, lone sets (a caller alone: one set a call), and totals whose text
 * takes each of the current script's routes (1, integers, fractions, 1e14 and past it).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { CONSUME } from '../../src/stores/redis-scripts.js';
import { CONSUME_V1 } from './redis-consume-v1.js';
import { CONSUME_V2 } from './redis-consume-v2.js';
import { REDIS_URL, uniqueName } from './servers.js';

const prefix = uniqueName('rsame');
const CLOCK = `${prefix}:clock`;
let raw: Redis;
const COPIES = ['old', 'v2', 'now'] as const;
type Copy = (typeof COPIES)[number];
const sha: Record<Copy, string> = { old: '', v2: '', now: '' };

/**
 * An earlier version with its numbers written as the current one writes them (exactly: integers by %d, others
 * by %.17g), instead of tostring's 14 digits (which froze a total past 1e14: test/stores/atk-redis-counter):
 * so that only their decisions, answers and writes are compared, not that text.
 */
function exact(source: string): string {
  const concat = "return table.concat(out, ' ')";
  if (!source.includes(concat) || !source.includes('tostring(')) throw new Error('an earlier version changed');
  const fn =
    'local function exact(x)\n' +
    "  if x % 1 == 0 and x < 9007199254740992 and x > -9007199254740992 and (x ~= 0 or 1 / x > 0) then return string.format('%d', x) end\n" +
    "  return string.format('%.17g', x)\n" +
    'end\n';
  const numbers = "for i = 1, #out do if type(out[i]) == 'number' then out[i] = exact(out[i]) end end\n";
  return fn + source.replaceAll('tostring(', 'exact(').replace(concat, numbers + concat);
}

/** The script with its `TIME` read replaced by the fake clock's key. */
function onFakeClock(source: string): string {
  const read = "local t = redis.call('TIME')\nlocal now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";
  if (!source.includes(read)) throw new Error('the script no longer reads the clock as this test expects');
  return source.replace(read, `local now = tonumber(redis.call('GET', '${CLOCK}'))`);
}

beforeAll(async () => {
  raw = new Redis(REDIS_URL);
  sha.old = (await raw.script('LOAD', onFakeClock(exact(CONSUME_V1)))) as string;
  sha.v2 = (await raw.script('LOAD', onFakeClock(exact(CONSUME_V2)))) as string;
  sha.now = (await raw.script('LOAD', onFakeClock(CONSUME))) as string;
});
afterAll(async () => {
  const keys = await raw.keys(`${prefix}:*`);
  if (keys.length > 0) await raw.del(...keys);
  raw.disconnect();
});

interface Charge {
  readonly key: string;
  readonly cost: number;
  readonly limit: number;
  readonly windowMs: number;
}

/**
 * KEYS and ARGV of a batch, as the store sends them, under one copy's prefix; `packed`: its numbers in one
 * argument (how the store sends a lone set to the current script).
 */
function call(copy: Copy, sets: readonly (readonly Charge[])[], packed = false): (string | number)[] {
  const keys: string[] = [];
  const args: (string | number)[] = [sets.length];
  for (const set of sets) {
    args.push(set.length);
    for (const c of set) {
      keys.push(`${prefix}:${copy}:${c.key}`);
      args.push(c.cost, c.limit, c.windowMs);
    }
  }
  return packed ? [keys.length, ...keys, args.join(' ')] : [keys.length, ...keys, ...args];
}

async function stateOf(copy: Copy, names: readonly string[]): Promise<unknown[]> {
  const p = raw.pipeline();
  for (const name of names) {
    const key = `${prefix}:${copy}:${name}`;
    p.type(key);
    p.lrange(key, 0, -1);
    p.call('PEXPIRETIME', key);
  }
  return ((await p.exec()) ?? []).map(([error, value]) => (error ? `error ${error.message}` : value));
}

/** A run: its counters, the values its charges pick from, and how its clock moves between batches. */
interface Shape {
  readonly names: readonly string[];
  readonly costs: readonly number[];
  readonly limits: readonly number[];
  readonly windows: readonly number[];
  readonly batches: number;
  /** Forward by up to `step` ms; back by up to 50 ms with probability `back`; by up to `jump` ms with `jumps`. */
  readonly step: number;
  readonly back: number;
  readonly jumps: number;
  readonly jump: number;
  /** At most this many sets a batch (4 unless told; 1: a lone caller's calls). */
  readonly sets?: number;
  /**
   * Whether the first version is compared too (unless told). Not where totals pass 2^53, nor on long sums of
   * fractions: it answered the totals before a refused charge as (total + cost) - cost, which can round off a
   * fraction's last bit (shown now that numbers are written exactly); the second version and this one answer
   * the total itself.
   */
  readonly first?: boolean;
}

/** Runs `batches` on both copies, comparing replies and keys after each. */
async function same(seed: number, shape: Shape): Promise<{ refused: number; allowed: number }> {
  const rand = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
  let now = Date.now() + 3_600_000;
  const tally = { refused: 0, allowed: 0 };
  // An earlier version's sorted set ("id:cost" scored by time, no TTL) on one counter, sometimes.
  if (rand() < 0.5) {
    const members: (string | number)[] = [];
    for (let i = 0; i < 1 + Math.floor(rand() * 150); i++)
      members.push(now - Math.floor(rand() * 2 * shape.windows.at(-1)!), `m${i}:${pick(shape.costs) || 1}`);
    for (const copy of COPIES) await raw.zadd(`${prefix}:${copy}:${shape.names[0]}`, ...members);
  }
  for (let b = 0; b < shape.batches; b++) {
    const r = rand();
    // Mostly a few ms on; sometimes past a window (heads leave); sometimes back (the clock stepped back).
    now +=
      r < shape.back
        ? -Math.floor(rand() * 50)
        : r < shape.back + shape.jumps
          ? Math.floor(rand() * shape.jump)
          : Math.floor(rand() * shape.step);
    await raw.set(CLOCK, String(now), 'PX', 600_000);
    const sets = Array.from({ length: 1 + Math.floor(rand() * (shape.sets ?? 4)) }, () =>
      Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({
        key: pick(shape.names),
        cost: pick(shape.costs),
        limit: pick(shape.limits),
        windowMs: pick(shape.windows),
      })),
    );
    const old = await raw.evalsha(sha.old, ...(call('old', sets) as [number, ...string[]]));
    const v2 = await raw.evalsha(sha.v2, ...(call('v2', sets) as [number, ...string[]]));
    // A lone set packed as the store sends it, or not (every other batch): the script reads both.
    const packed = sets.length === 1 && b % 2 === 0;
    const mine = await raw.evalsha(sha.now, ...(call('now', sets, packed) as [number, ...string[]]));
    if (shape.first !== false) expect(v2, `seed ${seed} batch ${b}: ${JSON.stringify(sets)}`).toBe(old);
    expect(mine, `seed ${seed} batch ${b}: ${JSON.stringify(sets)}`).toBe(v2);
    const state = await stateOf('v2', shape.names);
    expect(await stateOf('old', shape.names), `seed ${seed} batch ${b}`).toEqual(state);
    expect(await stateOf('now', shape.names), `seed ${seed} batch ${b}`).toEqual(state);
    for (const part of String(v2).split(' ')) if (part === '0') tally.refused++;
    tally.allowed += sets.length;
  }
  return tally;
}

describe('the counter script, cut for speed, against its first two versions', () => {
  it('answers and writes alike on random batches of a few counters (refusals, costs of 0, heads leaving)', async () => {
    let refused = 0;
    for (let seed = 1; seed <= 24; seed++) {
      const t = await same(seed, {
        names: [`a${seed}`, `b${seed}`, `c${seed}`],
        costs: [0, 0.5, 1, 1, 2, 3, 7],
        limits: [0, 1, 3, 5, 10, 20],
        windows: [50, 200, 1000],
        batches: 40,
        step: 40,
        back: 0.03,
        jumps: 0.08,
        jump: 2000,
      });
      refused += t.refused;
    }
    expect(refused).toBeGreaterThan(50);
  }, 120_000);

  it('answers and writes alike on long logs (retry times and expired heads past the first 100 entries)', async () => {
    for (let seed = 100; seed < 103; seed++)
      await same(seed, {
        names: [`long${seed}`],
        costs: [0.01, 0.02, 0.05, 20],
        limits: [1e6, 1e6, 1e6, 3],
        windows: [600, 900],
        batches: 600,
        step: 4,
        back: 0.005,
        jumps: 0.006,
        jump: 700,
        first: false,
      });
  }, 120_000);

  it('answers and writes alike for a lone caller (one set a call) and for totals of every text route', async () => {
    let refused = 0;
    for (let seed = 200; seed < 216; seed++) {
      const t = await same(seed, {
        names: [`x${seed}`, `y${seed}`],
        // 1 (its own route), integers, fractions, and totals that reach 1e14 and pass it (%.14g's exponent).
        costs: [0, 1, 1, 2, 0.25, 1 / 3, 3e13, 9e13 + 0.5, 1e14, 2.5e14],
        limits: [1, 5, 20, 99_999_999_999_999, 1e14, 1e15, 1e300],
        windows: [100, 1000],
        batches: 60,
        step: 30,
        back: 0.03,
        jumps: 0.05,
        jump: 1500,
        sets: seed % 2 === 0 ? 1 : 4,
        first: false,
      });
      refused += t.refused;
    }
    expect(refused).toBeGreaterThan(20);
  }, 120_000);
});
