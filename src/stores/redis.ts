/**
 * `toolgate/redis`: counters and rate limits (sliding windows), single-use nonces, and a short-lived ledger
 * in Redis (`ioredis`, an optional peer; the root entry never imports this file). Every check-and-write is
 * one Lua script or one `SET NX PX`, which Redis runs atomically; windows use the server's clock (`TIME`), so
 * workers' clocks do not matter; every key has a TTL, so nothing outlives its window.
 *
 * A client that the stores create fails fast while the server is unreachable (no offline queue, one retry,
 * a command timeout): the operation rejects and the call that needed it is refused, instead of waiting.
 */
import { Redis } from 'ioredis';
import { describe } from '../names.js';
import { CoalescedConsume, type SendSets } from './coalesce.js';
import { ready, scripts } from './redis-scripts.js';
import {
  checkCharges,
  entryWith,
  ledgerQueryOf,
  outcomeRow,
  readOutcome,
  requireIdentifier,
  requireKey,
  requireNumber,
  reservationOf,
  settledOutcome,
} from './shared.js';
import type {
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
} from './types.js';

/** Options of {@link RedisStores}. */
export interface RedisStoresOptions {
  /** A `redis://` URL. Ignored when `client` is given. @default 'redis://127.0.0.1:6379' */
  readonly url?: string;
  /** A client to use instead (the stores do not quit it; give it fail-fast options of your own). */
  readonly client?: Redis;
  /** Prefix of every key, so that deployments (or test runs) sharing a server never collide. @default 'toolgate' */
  readonly prefix?: string;
  /** How long one command may take before it fails (closed). @default 2000 */
  readonly commandTimeoutMs?: number;
  /** How long the ledger keeps a key (a call recorded longer ago could run again if replayed). @default 604_800_000 (7 days) */
  readonly ledgerRetentionMs?: number;
}

/** Decides charge sets in one script call, in order (see CONSUME). */
function sendSets(client: Redis, key: (kind: string, name: string) => string): SendSets {
  return (sets) => {
    if (sets.length === 1) {
      // A lone set (a caller alone): its numbers in one argument, which ioredis builds and the server reads
      // in less time than one argument per number (the script splits it; ~0.5 µs p50 a call, A/B).
      const charges = sets[0]!;
      const keys: string[] = [];
      let numbers = `1 ${charges.length}`;
      for (const c of charges) {
        keys.push(key('c', c.key));
        numbers += ` ${c.cost} ${c.limit} ${Math.ceil(c.windowMs)}`;
      }
      return scripts.consume.run(client, keys, [numbers], (reply) => verdictsOf(reply, 1));
    }
    const keys: string[] = [];
    const args: (string | number)[] = [sets.length];
    for (const charges of sets) {
      args.push(charges.length);
      for (const c of charges) {
        keys.push(key('c', c.key));
        args.push(c.cost, c.limit, Math.ceil(c.windowMs));
      }
    }
    return scripts.consume.run(client, keys, args, (reply) => verdictsOf(reply, sets.length));
  };
}

/** The verdicts in the script's reply, one string of numbers (per set: allowed, index, retry, count, totals…). */
function verdictsOf(reply: unknown, sets: number): CounterVerdict[] {
  const r = typeof reply === 'string' ? reply.split(' ').map(Number) : [];
  const out: CounterVerdict[] = [];
  let at = 0;
  for (let i = 0; i < sets; i++) {
    const count = r[at + 3]!;
    if (!Number.isInteger(count) || count < 0 || r.length < at + 4 + count)
      throw new Error(`the counter script answered ${describe(reply)}, which holds no verdict for set ${i}`);
    const used = r.slice(at + 4, at + 4 + count);
    if (r[at] === 1) out.push({ allowed: true, used });
    else {
      const retry = r[at + 2]!;
      out.push({ allowed: false, used, index: r[at + 1]!, retryAfterMs: retry < 0 ? null : retry });
    }
    at += 4 + count;
  }
  return out;
}

/**
 * The Redis stores: `counters`, `nonces`, `ledger` (short-lived: each key lives `ledgerRetentionMs`).
 *
 * @example
 * import { RedisStores } from 'toolgate/redis';
 * const redis = new RedisStores({ url: 'redis://127.0.0.1:6379', prefix: 'shop' });
 * const limiter = new Limiter({ counters: redis.counters, limits });
 */
export class RedisStores {
  readonly counters: CounterStore;
  readonly nonces: NonceStore;
  readonly ledger: Ledger;
  /** The client (created from `url`, or the one given). */
  readonly client: Redis;
  readonly #owned: boolean;
  /** The command timeout whose timer list this instance holds alive (see the constructor), until `close`. */
  #timerList: number | null;

  constructor(options: RedisStoresOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`RedisStores expects an options object, got ${describe(options)}`);
    const prefix = options.prefix ?? 'toolgate';
    requireIdentifier(prefix, 'RedisStores option "prefix"');
    const timeout = options.commandTimeoutMs ?? 2000;
    requireNumber(timeout, 'RedisStores option "commandTimeoutMs"', 1);
    const retention = options.ledgerRetentionMs ?? 604_800_000;
    requireNumber(retention, 'RedisStores option "ledgerRetentionMs"', 1);
    if (options.url !== undefined && typeof options.url !== 'string')
      throw new TypeError(`RedisStores option "url" must be a string, got ${describe(options.url)}`);
    this.#owned = options.client === undefined;
    const failFast = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: timeout,
      connectTimeout: timeout,
      // Reconnect forever, but not faster than every 500 ms: the stores recover when the server is back.
      retryStrategy: (times: number) => Math.min(50 * times, 500),
    };
    this.client = options.client ?? new Redis(options.url ?? 'redis://127.0.0.1:6379', failFast);
    // An unhandled 'error' event would end the process; a command that needed the server rejects anyway.
    if (this.#owned) this.client.on('error', () => undefined);
    const client = this.client;
    // ioredis arms a timer of `commandTimeout` per command and clears it on the reply. Node keeps one list of
    // timers per duration and drops it (and re-creates it, with its libuv timer) whenever it empties, which a
    // lone caller's every command does: one unref'd interval of that duration keeps the list, so arming and
    // clearing a command's timer is a list insert and removal (~0.6 µs a command less; bench/redis-floor.ts).
    const timeoutMs = client.options.commandTimeout;
    // One interval per duration in the process, shared by every RedisStores of it and cleared when the last one
    // holding it closes: a store over a caller's client is seldom closed, and an interval per construction was
    // one more wake-up per timeout for the life of the process.
    this.#timerList =
      // (Past 2^31 - 1 ms Node would fire it every millisecond instead: none then.)
      typeof timeoutMs === 'number' && timeoutMs >= 1 && timeoutMs <= 2_147_483_647 ? holdTimerList(timeoutMs) : null;
    const key = (kind: string, name: string): string => `${prefix}:${kind}:${name}`;
    const batch = new CoalescedConsume(sendSets(client, key));

    this.counters = {
      name: `redis ${client.options.host ?? '?'}:${client.options.port ?? '?'} prefix ${JSON.stringify(prefix)}`,
      consume(charges: readonly CounterCharge[]): Promise<CounterVerdict> {
        try {
          checkCharges(charges);
        } catch (error) {
          return Promise.reject(error);
        }
        return batch.push(charges);
      },
      async peek(name: string, windowMs: number): Promise<number> {
        requireKey(name, 'key');
        requireNumber(windowMs, 'windowMs', 1);
        return Number(await scripts.peek.run(client, [key('c', name)], [String(Math.ceil(windowMs))]));
      },
    };

    this.nonces = {
      async consume(nonce: string, ttlMs: number): Promise<boolean> {
        requireKey(nonce, 'nonce');
        requireNumber(ttlMs, 'ttlMs');
        await ready(client);
        return (await client.set(key('n', nonce), '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK';
      },
    };

    this.ledger = {
      async reserve(name: string, owner: string, leaseMs: number): Promise<LedgerReservation> {
        requireKey(name, 'key');
        requireKey(owner, 'owner');
        requireNumber(leaseMs, 'leaseMs');
        const r = (await scripts.reserve.run(client, [key('l', name)], [owner, Math.ceil(leaseMs), retention])) as (
          string | number | null
        )[];
        if (r[0] === 1) return { state: 'reserved' };
        return reservationOf(entryOf(name, r.slice(1, 6)), Number(r[6]));
      },
      async record(name: string, owner: string, outcome: LedgerOutcome): Promise<boolean> {
        const value = JSON.stringify(outcomeRow(outcome));
        return (await scripts.record.run(client, [key('l', name)], [owner, value])) === 1;
      },
      async release(name: string, owner: string): Promise<boolean> {
        return (await scripts.release.run(client, [key('l', name)], [owner])) === 1;
      },
      async inspect(name: string): Promise<LedgerEntry | undefined> {
        await ready(client);
        const r = await client.hmget(key('l', name), 'owner', 'reservedAt', 'leaseUntil', 'outcome', 'recordedAt');
        return r[0] === null ? undefined : entryOf(name, r);
      },
      async list(query?: LedgerQuery): Promise<LedgerEntry[]> {
        const lq = ledgerQueryOf(query);
        await ready(client);
        // The server's clock decides what reads as unknown, as in reserve.
        const [seconds, micros] = await client.time();
        const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
        const head = key('l', '');
        const out: LedgerEntry[] = [];
        let cursor = '0';
        do {
          const [next, keys] = await client.scan(cursor, 'MATCH', `${head}*`, 'COUNT', 500);
          cursor = next;
          for (const k of keys) {
            const r = await client.hmget(k, 'owner', 'reservedAt', 'leaseUntil', 'outcome', 'recordedAt');
            if (r[0] === null) continue;
            const entry = entryOf(k.slice(head.length), r);
            if (lq.unknown && (entry.recordedAt !== null || now < entry.leaseUntil)) continue;
            if (lq.since !== undefined && entry.reservedAt < lq.since) continue;
            out.push(entry);
          }
        } while (cursor !== '0');
        return out.sort((a, b) => a.reservedAt - b.reservedAt || (a.key < b.key ? -1 : 1)).slice(0, lq.limit);
      },
      async settle(name: string, settlement: LedgerSettlement): Promise<boolean> {
        const value = JSON.stringify(settledOutcome(settlement));
        requireKey(name, 'key');
        return (await scripts.settle.run(client, [key('l', name)], [value])) === 1;
      },
    };
  }

  /** Deletes every key under `prefix` (tests; an operator resetting a deployment). */
  async clear(prefix: string): Promise<void> {
    requireIdentifier(prefix, 'prefix');
    await ready(this.client);
    let cursor = '0';
    do {
      const [next, keys] = await this.client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      if (keys.length > 0) await this.client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  }

  /** Quits the client when the stores created it. */
  async close(): Promise<void> {
    if (this.#timerList !== null) releaseTimerList(this.#timerList);
    this.#timerList = null;
    if (this.#owned) await this.client.quit().catch(() => this.client.disconnect());
  }
}

function entryOf(key: string, r: readonly (string | number | null | false | undefined)[]): LedgerEntry {
  const recordedAt = r[4] === null || r[4] === false || r[4] === undefined ? null : Number(r[4]);
  return entryWith(
    {
      key,
      owner: String(r[0]),
      reservedAt: Number(r[1]),
      leaseUntil: Number(r[2]),
      outcome: recordedAt === null ? null : readOutcome(r[3]),
      recordedAt,
    },
    r[3],
  );
}

/** The timer-list intervals of the process by duration, with how many RedisStores hold each. */
const timerLists = new Map<number, { readonly timer: ReturnType<typeof setInterval>; held: number }>();

function holdTimerList(ms: number): number {
  const list = timerLists.get(ms);
  if (list !== undefined) list.held++;
  else timerLists.set(ms, { timer: setInterval(() => undefined, ms).unref(), held: 1 });
  return ms;
}

function releaseTimerList(ms: number): void {
  const list = timerLists.get(ms);
  if (list === undefined || --list.held > 0) return;
  clearInterval(list.timer);
  timerLists.delete(ms);
}
