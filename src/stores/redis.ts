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

// Sliding-window log per counter, one list per counter (KEYS[i], one per charge): element 0 is a header
// "total until oldest" (the running total, when the key's TTL ends, the time of the oldest entry); then one
// "ms:cost" entry per write, appended in the server's time order (`TIME`), so what has left the window is a
// run at the head. One call decides a batch of charge sets, in order, each all or nothing (the concurrent
// charges of one process, coalesced). The first time a counter is met, `LINDEX 0` reads its header (the common
// case: one read); if the oldest entry has left the window, the expired head is subtracted and trimmed (an
// emptied log is deleted: a total of 0 exactly). A set is allowed only when every charge of it fits (two on one
// counter must fit together), or refused and nothing of it is added. What the allowed sets add is written once
// per counter at the end: one entry holding their summed cost (they share the server's `now`, so they leave
// the window together: exact) and the header; the TTL is moved only when it would end within a window of now
// (then to a window and SLACK from now), so a key outlives its last entry by at most SLACK. If the server's
// clock steps back, an entry older than one before it leaves the window with that one: a count is only ever
// kept longer, never dropped early. A sorted set left at the key by an earlier version (members "id:cost"
// scored by time) is converted in place the first time it is met. ARGV: the number of sets, then per set its
// number of charges and cost, limit, window per charge. Returns one string of numbers, per set: allowed (1/0),
// index of the refused charge (-1), retryAfterMs (-1: never), the number of totals, the totals.
const CONSUME = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local SLACK = 60000
local function entry(e)
  local c = string.find(e, ':', 1, true)
  return tonumber(string.sub(e, 1, c - 1)), tonumber(string.sub(e, c + 1))
end
-- til and oldest as the header holds them (strings: read back and written again unchanged).
local function header(total, til, oldest)
  return tostring(total) .. ' ' .. til .. ' ' .. oldest
end
-- An earlier version's sorted set at z, as a list (keeping its TTL): its header; any other error is raised.
local function converted(z, r)
  if not string.find(r.err, 'WRONGTYPE', 1, true) or redis.call('TYPE', z).ok ~= 'zset' then
    return redis.call('LINDEX', z, 0)
  end
  local ttl = redis.call('PTTL', z)
  local m = redis.call('ZRANGE', z, 0, -1, 'WITHSCORES')
  redis.call('DEL', z)
  if #m == 0 then return false end
  local total, list = 0, {}
  for e = 1, #m, 2 do
    local cost = tonumber(string.match(m[e], ':([^:]+)$'))
    total = total + cost
    list[#list + 1] = string.format('%d', tonumber(m[e + 1])) .. ':' .. tostring(cost)
  end
  local h = header(total, string.format('%d', ttl > 0 and now + ttl or 0), string.format('%d', tonumber(m[2])))
  redis.call('RPUSH', z, h)
  for s = 1, #list, 1000 do redis.call('RPUSH', z, unpack(list, s, math.min(s + 999, #list))) end
  if ttl > 0 then redis.call('PEXPIRE', z, ttl) end
  return h
end
-- The counter's total now, its expired head dropped; when its TTL ends (nil: no list) and its oldest entry's
-- time, both as the header holds them.
local function current(z, window)
  local h = redis.pcall('LINDEX', z, 0)
  if type(h) == 'table' then h = converted(z, h) end
  if not h then return 0, nil end
  local total, til, oldest = string.match(h, '^(%S+) (%S+) (%S+)$')
  total = tonumber(total)
  if tonumber(oldest) > now - window then return total, til, oldest end
  local at = 1
  while true do
    local chunk = redis.call('LRANGE', z, at, at + 99)
    for _, e in ipairs(chunk) do
      local eat, cost = entry(e)
      if eat > now - window then
        if total < 0 then total = 0 end
        -- The new header takes the place of the last expired entry; everything before it goes.
        local first = string.sub(e, 1, string.find(e, ':', 1, true) - 1)
        redis.call('LSET', z, at - 1, header(total, til, first))
        redis.call('LTRIM', z, at - 1, -1)
        return total, til, first
      end
      total = total - cost
      at = at + 1
    end
    if #chunk < 100 then
      redis.call('DEL', z)
      return 0, nil
    end
  end
end
local sets = tonumber(ARGV[1])
local a, k = 2, 1
local totals, ends, oldests, added, order, longest = {}, {}, {}, {}, {}, {}
local out = {}
for s = 1, sets do
  local n = tonumber(ARGV[a])
  a = a + 1
  local zs, costs, windows, used, pending = {}, {}, {}, {}, {}
  local refused, retry = nil, -1
  for i = 1, n do
    local z = KEYS[k]
    local cost, limit, window = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    k, a = k + 1, a + 3
    zs[i], costs[i], windows[i] = z, cost, window
    if refused == nil then
      if totals[z] == nil then
        local til
        totals[z], til, oldests[z] = current(z, window)
        ends[z] = til or false
      end
      local total = totals[z] + (pending[z] or 0)
      if total + cost > limit then
        refused = i
        if cost <= limit then
          -- When enough of the oldest cost has left: entries leave in list order, so the latest time among them.
          local need, freed, latest, at = total + cost - limit, 0, nil, 1
          while retry < 0 and ends[z] do
            local chunk = redis.call('LRANGE', z, at, at + 99)
            for _, e in ipairs(chunk) do
              local eat, ecost = entry(e)
              if latest == nil or eat > latest then latest = eat end
              freed = freed + ecost
              if freed >= need then retry = latest + window - now + 1; break end
            end
            if #chunk < 100 then break end
            at = at + #chunk
          end
          -- What earlier sets of this batch added is not written yet; it leaves the window a window from now.
          if retry < 0 and added[z] ~= nil and freed + added[z] >= need then retry = window + 1 end
        end
        for j = 1, i - 1 do used[j] = used[j] - costs[j] end
        used[i] = total
      else
        pending[z] = (pending[z] or 0) + cost
        used[i] = total + cost
      end
    end
  end
  if refused == nil then
    for i = 1, n do
      local z = zs[i]
      if costs[i] > 0 then
        if added[z] == nil then
          added[z] = 0
          order[#order + 1] = z
        end
        added[z] = added[z] + costs[i]
        totals[z] = totals[z] + costs[i]
        if longest[z] == nil or windows[i] > longest[z] then longest[z] = windows[i] end
      end
    end
    out[#out + 1] = '1 -1 0'
    out[#out + 1] = n
  else
    out[#out + 1] = '0'
    out[#out + 1] = refused - 1
    out[#out + 1] = retry
    out[#out + 1] = refused
  end
  for i = 1, refused or n do out[#out + 1] = tostring(used[i]) end
end
local nowText = #order > 0 and string.format('%d', now) or nil
for _, z in ipairs(order) do
  local til = ends[z]
  local moved = not til or tonumber(til) < now + longest[z]
  if moved then til = string.format('%d', now + longest[z] + math.min(longest[z], SLACK)) end
  local e = nowText .. ':' .. tostring(added[z])
  if ends[z] then
    redis.call('RPUSH', z, e)
    redis.call('LSET', z, 0, header(totals[z], til, oldests[z]))
  else
    redis.call('RPUSH', z, header(totals[z], til, nowText), e)
  end
  if moved then redis.call('PEXPIREAT', z, til) end
end
return table.concat(out, ' ')
`;

// The total of what is within the window now: a list (see CONSUME), or an earlier version's sorted set.
const PEEK = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local since = now - tonumber(ARGV[1])
local total = 0
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'list' then
  for _, e in ipairs(redis.call('LRANGE', KEYS[1], 1, -1)) do
    local c = string.find(e, ':', 1, true)
    if tonumber(string.sub(e, 1, c - 1)) > since then total = total + tonumber(string.sub(e, c + 1)) end
  end
elseif kind == 'zset' then
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. since, '+inf')) do
    total = total + tonumber(string.match(m, ':([^:]+)$'))
  end
end
return tostring(total)
`;

// The ledger row is a hash; HSETNX on "owner" is the reservation. Returns {won, owner, reservedAt, leaseUntil, outcome, recordedAt, now}.
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('HSETNX', KEYS[1], 'owner', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'reservedAt', now, 'leaseUntil', now + tonumber(ARGV[2]))
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {1}
end
local r = redis.call('HMGET', KEYS[1], 'owner', 'reservedAt', 'leaseUntil', 'outcome', 'recordedAt')
return {0, r[1], r[2], r[3], r[4] or false, r[5] or false, tostring(now)}
`;

const RECORD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] or redis.call('HEXISTS', KEYS[1], 'recordedAt') == 1 then return 0 end
redis.call('HSET', KEYS[1], 'outcome', ARGV[2], 'recordedAt', now)
return 1
`;

const RELEASE = `
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] or redis.call('HEXISTS', KEYS[1], 'recordedAt') == 1 then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;

// An operator settles a row that reads as unknown: reserved, never recorded, lease passed (server clock).
const SETTLE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('HEXISTS', KEYS[1], 'owner') == 0 or redis.call('HEXISTS', KEYS[1], 'recordedAt') == 1 then return 0 end
if tonumber(redis.call('HGET', KEYS[1], 'leaseUntil')) > now then return 0 end
redis.call('HSET', KEYS[1], 'outcome', ARGV[1], 'recordedAt', now)
return 1
`;

/**
 * Waits (at most the connect timeout) for a client that is connecting: without the offline queue a command
 * sent before the connection is ready would fail although the server is up. One that stays down rejects.
 */
function ready(client: Redis): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  if (client.status === 'wait') return client.connect();
  if (client.status === 'end') return Promise.reject(new Error('the Redis client was closed'));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => {
        client.off('ready', onReady);
        reject(new Error(`Redis is not reachable (${client.status})`));
      },
      Number(client.options.connectTimeout ?? 2000),
    );
    const onReady = (): void => {
      clearTimeout(timer);
      resolve();
    };
    client.once('ready', onReady);
  });
}

/** Runs a script by its SHA, loading it on the first NOSCRIPT. */
class Script {
  readonly #source: string;
  #sha: string | null = null;

  constructor(source: string) {
    this.#source = source;
  }

  run(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    // The common case (connected, loaded) is the EVALSHA's own promise: no await of ours in between.
    if (client.status === 'ready' && this.#sha !== null)
      return client.evalsha(this.#sha, keys.length, ...keys, ...args).catch((error: unknown) => {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        this.#sha = null;
        return this.#load(client, keys, args);
      });
    return this.#load(client, keys, args);
  }

  async #load(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    if (client.status !== 'ready') await ready(client);
    if (this.#sha === null) this.#sha = (await client.script('LOAD', this.#source)) as string;
    else {
      try {
        return await client.evalsha(this.#sha, keys.length, ...keys, ...args);
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      }
      this.#sha = (await client.script('LOAD', this.#source)) as string;
    }
    return client.evalsha(this.#sha, keys.length, ...keys, ...args);
  }
}

const scripts = {
  consume: new Script(CONSUME),
  peek: new Script(PEEK),
  reserve: new Script(RESERVE),
  record: new Script(RECORD),
  release: new Script(RELEASE),
  settle: new Script(SETTLE),
};

/** Decides charge sets in one script call, in order (see CONSUME). */
function sendSets(client: Redis, key: (kind: string, name: string) => string): SendSets {
  return (sets) => {
    const keys: string[] = [];
    const args: (string | number)[] = [sets.length];
    for (const charges of sets) {
      args.push(charges.length);
      for (const c of charges) {
        keys.push(key('c', c.key));
        args.push(c.cost, c.limit, Math.ceil(c.windowMs));
      }
    }
    return scripts.consume.run(client, keys, args).then((reply) => verdictsOf(reply, sets.length));
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
