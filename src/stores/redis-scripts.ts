/**
 * The Lua scripts of the Redis stores (`toolgate/redis`) and how they are run (by SHA, loaded on the first
 * NOSCRIPT). Every check-and-write is one script, which Redis runs atomically; windows use the server's clock
 * (`TIME`), so workers' clocks do not matter. Internal: not exported from an entry point.
 */
import type { Redis } from 'ioredis';

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
// number of charges and cost, limit, window per charge (or all of them in one argument, space-separated).
// Returns one string of numbers, per set: allowed (1/0), index of the refused charge (-1), retryAfterMs (-1:
// never), the number of totals, the totals.
//
// Cheap per call (the server's own time is most of what a limit adds to a round trip): a lone set whose
// counters are distinct, within their windows and fit (a caller alone, the common case) takes a fast path of
// straight code, no function or table per counter; every other call the general path, with one table per
// counter met and a few per call, none per set. Numbers go to redis.call as text (a Lua number argument is
// formatted by the server, ~0.3 µs each) and each number is written once, so that it reads back exactly
// (integers by `%d`, others by `%.17g`; the first two versions wrote tostring's 14 digits, which froze a total
// past 1e14). Decides, answers and writes as the first two versions did, but for that text
// (test/stores/redis-consume-same.test.ts runs all three on random charge sequences, theirs made exact too).
export const CONSUME = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local SLACK = 60000
local call, try, tonumber = redis.call, redis.pcall, tonumber
local find, sub, format, min = string.find, string.sub, string.format, math.min
-- A number as text that reads back as the same number: integers below 2^53 by %d, any other by %.17g. Not
-- tostring (%.14g): a total past 1e14 written with 14 digits lost what small costs added (a limit of 1e14 + 3
-- let every call of cost 1 run), and a fraction's total drifted from the memory store's.
local function text(x)
  if x == 1 then return '1' end
  if x % 1 == 0 and x < 9007199254740992 and x > -9007199254740992 and (x ~= 0 or 1 / x > 0) then
    return format('%d', x)
  end
  return format('%.17g', x)
end
-- The headers (LINDEX 0 replies) the fast path read before it handed a call to the general path, by key.
local known = nil
-- One argument holding every number, space-separated: how the store sends a lone set (each argument costs the
-- client and the server more to build and read than this split); several arguments: one number each.
local argv = ARGV
if #ARGV == 1 then
  local s, p, j = ARGV[1], 1, 0
  argv = {false, false, false, false, false, false, false, false}
  while true do
    local q = find(s, ' ', p, true)
    j = j + 1
    if not q then
      argv[j] = sub(s, p)
      break
    end
    argv[j] = sub(s, p, q - 1)
    p = q + 1
  end
end
-- The fast path: one set (a caller alone) whose charges are on distinct counters, each a list whose head is
-- within its window or no key, and each fits. It decides, answers and writes as the general path below does
-- for such a set, with none of its functions and per-counter tables (the server's time per call is most of
-- what a limit adds to a round trip); anything else goes on to the general path, nothing written yet.
if argv[1] == '1' then
  local n = tonumber(argv[2])
  -- Per charge i, at 5i-4…5i: its header as read, til, oldest, total after it, cost; and its window below.
  local st = {false, false, false, false, false, false, false, false, false, false}
  local windows = {false, false}
  local i, a, read = 1, 3, 0
  while i <= n do
    local z = KEYS[i]
    local j = 1
    while j < i and KEYS[j] ~= z do j = j + 1 end
    if j < i then break end
    local h = try('LINDEX', z, '0')
    read, st[5 * i - 4] = i, h
    if type(h) == 'table' then break end
    local cost, limit, window = tonumber(argv[a]), tonumber(argv[a + 1]), tonumber(argv[a + 2])
    local total, til, oldest = 0, false, false
    if h then
      local p = find(h, ' ', 1, true)
      local q = find(h, ' ', p + 1, true)
      total, til, oldest = tonumber(sub(h, 1, p - 1)), sub(h, p + 1, q - 1), sub(h, q + 1)
      if tonumber(oldest) <= now - window then break end
    end
    if total + cost > limit then break end
    st[5 * i - 3], st[5 * i - 2], st[5 * i - 1], st[5 * i], windows[i] = til, oldest, total + cost, cost, window
    i, a = i + 1, a + 3
  end
  if i > n then
    local nowText = format('%d', now)
    local reply = '1 -1 0 ' .. text(n)
    for i = 1, n do
      local til, used, cost = st[5 * i - 3], st[5 * i - 1], st[5 * i]
      local u = text(used)
      reply = reply .. ' ' .. u
      if cost > 0 then
        local z, longest = KEYS[i], 0
        if windows[i] > 0 then longest = windows[i] end
        local moved = not til or tonumber(til) < now + longest
        if moved then til = format('%d', now + longest + min(longest, SLACK)) end
        if st[5 * i - 3] then
          call('RPUSH', z, nowText .. ':' .. text(cost))
          call('LSET', z, '0', u .. ' ' .. til .. ' ' .. st[5 * i - 2])
        else
          call('RPUSH', z, u .. ' ' .. til .. ' ' .. nowText, nowText .. ':' .. text(cost))
        end
        if moved then call('PEXPIREAT', z, til) end
      end
    end
    return reply
  end
  known = {}
  for j = 1, read do known[KEYS[j]] = st[5 * j - 4] end
end
local function entry(e)
  local c = find(e, ':', 1, true)
  return tonumber(sub(e, 1, c - 1)), tonumber(sub(e, c + 1))
end
-- An earlier version's sorted set at z, as a list (keeping its TTL): its header; any other error is raised.
local function converted(z, r)
  if not find(r.err, 'WRONGTYPE', 1, true) or call('TYPE', z).ok ~= 'zset' then
    return call('LINDEX', z, '0')
  end
  local ttl = call('PTTL', z)
  local m = call('ZRANGE', z, 0, -1, 'WITHSCORES')
  call('DEL', z)
  if #m == 0 then return false end
  local total, list = 0, {}
  for e = 1, #m, 2 do
    local cost = tonumber(string.match(m[e], ':([^:]+)$'))
    total = total + cost
    list[#list + 1] = format('%d', tonumber(m[e + 1])) .. ':' .. text(cost)
  end
  local h = text(total) .. ' ' .. format('%d', ttl > 0 and now + ttl or 0) .. ' ' .. format('%d', tonumber(m[2]))
  call('RPUSH', z, h)
  for s = 1, #list, 1000 do call('RPUSH', z, unpack(list, s, math.min(s + 999, #list))) end
  if ttl > 0 then call('PEXPIRE', z, ttl) end
  return h
end
-- A counter as first met: {total now, when its TTL ends (false: no list), its oldest entry's time (both as
-- the header holds them), added by this call, the longest window of what was added, the set last charged,
-- what that set has pending, the last total answered for it and its text}; its expired head dropped.
local function counter(z, window)
  local h = nil
  if known then h = known[z] end
  if h == nil then h = try('LINDEX', z, '0') end
  if type(h) == 'table' then h = converted(z, h) end
  if not h then return {0, false, false, 0, 0, 0, 0, false, false} end
  local p = find(h, ' ', 1, true)
  local q = find(h, ' ', p + 1, true)
  local total, til, oldest = tonumber(sub(h, 1, p - 1)), sub(h, p + 1, q - 1), sub(h, q + 1)
  if tonumber(oldest) > now - window then return {total, til, oldest, 0, 0, 0, 0, false, false} end
  local at = 1
  while true do
    local chunk = call('LRANGE', z, at, at + 99)
    for _, e in ipairs(chunk) do
      local eat, cost = entry(e)
      if eat > now - window then
        if total < 0 then total = 0 end
        -- The new header takes the place of the last expired entry; everything before it goes.
        local first = sub(e, 1, find(e, ':', 1, true) - 1)
        call('LSET', z, at - 1, text(total) .. ' ' .. til .. ' ' .. first)
        call('LTRIM', z, at - 1, -1)
        return {total, til, first, 0, 0, 0, 0, false, false}
      end
      total = total - cost
      at = at + 1
    end
    if #chunk < 100 then
      call('DEL', z)
      return {0, false, false, 0, 0, 0, 0, false, false}
    end
  end
end
-- When enough of the oldest cost of counter c (at z) will have left its window for need to fit; -1: never.
local function retryOf(z, c, need, window)
  local retry, freed, latest, at = -1, 0, nil, 1
  -- Entries leave in list order, so the latest time among them.
  while retry < 0 and c[2] do
    local chunk = call('LRANGE', z, at, at + 99)
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
  if retry < 0 and c[4] > 0 and freed + c[4] >= need then retry = window + 1 end
  return retry
end
local counters, order, out, o = {}, {}, {}, 0
-- Per charge of the set being decided: its counter's total before it, its cost, its window.
local before, costs, windows = {}, {}, {}
local a, k = 2, 1
for s = 1, tonumber(argv[1]) do
  local n = tonumber(argv[a])
  local a0, k0 = a + 1, k
  local refused, retry = nil, -1
  a = a0
  for i = 1, n do
    local z = KEYS[k]
    local cost, limit, window = tonumber(argv[a]), tonumber(argv[a + 1]), tonumber(argv[a + 2])
    local c = counters[z]
    if c == nil then
      c = counter(z, window)
      counters[z] = c
    end
    if c[6] ~= s then c[6], c[7] = s, 0 end
    local total = c[1] + c[7]
    before[i], costs[i], windows[i] = total, cost, window
    if total + cost > limit then
      refused = i
      if cost <= limit then retry = retryOf(z, c, total + cost - limit, window) end
      break
    end
    c[7] = c[7] + cost
    k, a = k + 1, a + 3
  end
  if refused == nil then
    out[o + 1], out[o + 2] = '1 -1 0', text(n)
    o = o + 2
    for i = 1, n do
      local cost = costs[i]
      local used = before[i] + cost
      local u = text(used)
      o = o + 1
      out[o] = u
      if cost > 0 then
        local c = counters[KEYS[k0 + i - 1]]
        if c[4] == 0 then order[#order + 1] = KEYS[k0 + i - 1] end
        c[4], c[1], c[8], c[9] = c[4] + cost, c[1] + cost, used, u
        if windows[i] > c[5] then c[5] = windows[i] end
      end
    end
  else
    out[o + 1], out[o + 2], out[o + 3], out[o + 4] = '0', text(refused - 1), text(retry), text(refused)
    o = o + 4
    for i = 1, refused do
      o = o + 1
      out[o] = text(before[i])
    end
  end
  k, a = k0 + n, a0 + 3 * n
end
if #order > 0 then
  local nowText = format('%d', now)
  for j = 1, #order do
    local z = order[j]
    local c = counters[z]
    local til, longest = c[2], c[5]
    local moved = not til or tonumber(til) < now + longest
    if moved then til = format('%d', now + longest + min(longest, SLACK)) end
    -- The total's text as last answered, when it is still the total (the common case: no second conversion).
    local total = c[8] == c[1] and c[9] or text(c[1])
    if c[2] then
      call('RPUSH', z, nowText .. ':' .. text(c[4]))
      call('LSET', z, '0', total .. ' ' .. til .. ' ' .. c[3])
    else
      call('RPUSH', z, total .. ' ' .. til .. ' ' .. nowText, nowText .. ':' .. text(c[4]))
    end
    if moved then call('PEXPIREAT', z, til) end
  end
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
return string.format('%.17g', total)
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
export function ready(client: Redis): Promise<void> {
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
export class Script {
  readonly #source: string;
  #sha: string | null = null;

  constructor(source: string) {
    this.#source = source;
  }

  run(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
  /** …with its reply read by `read` in the same step (one promise fewer on the common path). */
  run<T>(
    client: Redis,
    keys: readonly string[],
    args: readonly (string | number)[],
    read: (reply: unknown) => T,
  ): Promise<T>;
  run(
    client: Redis,
    keys: readonly string[],
    args: readonly (string | number)[],
    read?: (reply: unknown) => unknown,
  ): Promise<unknown> {
    // The common case (connected, loaded) is the EVALSHA's own promise: no await of ours in between.
    if (client.status === 'ready' && this.#sha !== null)
      return client.evalsha(this.#sha, keys.length, ...keys, ...args).then(read, (error: unknown) => {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        this.#sha = null;
        const loaded = this.#load(client, keys, args);
        return read ? loaded.then(read) : loaded;
      });
    const loaded = this.#load(client, keys, args);
    return read ? loaded.then(read) : loaded;
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

/** The stores' scripts, each loaded once per server. */
export const scripts = {
  consume: new Script(CONSUME),
  peek: new Script(PEEK),
  reserve: new Script(RESERVE),
  record: new Script(RECORD),
  release: new Script(RELEASE),
  settle: new Script(SETTLE),
};
