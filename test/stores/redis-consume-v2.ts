/**
 * The counter script as it was before its number conversions were cut (issue 25 target 4, second pass): kept
 * so that redis-consume-same.test.ts also checks the current one against it, and for same-run A/B benches.
 * Not used by the stores.
 */
export const CONSUME_V2 = `
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
-- A counter as first met: {total now, when its TTL ends (false: no list), its oldest entry's time (both as
-- the header holds them), added by this call, the longest window of what was added, the set last charged,
-- what that set has pending}; its expired head dropped.
local function counter(z, window)
  local h = redis.pcall('LINDEX', z, 0)
  if type(h) == 'table' then h = converted(z, h) end
  if not h then return {0, false, false, 0, 0, 0, 0} end
  local total, til, oldest = string.match(h, '^(%S+) (%S+) (%S+)$')
  total = tonumber(total)
  if tonumber(oldest) > now - window then return {total, til, oldest, 0, 0, 0, 0} end
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
        return {total, til, first, 0, 0, 0, 0}
      end
      total = total - cost
      at = at + 1
    end
    if #chunk < 100 then
      redis.call('DEL', z)
      return {0, false, false, 0, 0, 0, 0}
    end
  end
end
-- When enough of the oldest cost of counter c (at z) will have left its window for need to fit; -1: never.
local function retryOf(z, c, need, window)
  local retry, freed, latest, at = -1, 0, nil, 1
  -- Entries leave in list order, so the latest time among them.
  while retry < 0 and c[2] do
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
  if retry < 0 and c[4] > 0 and freed + c[4] >= need then retry = window + 1 end
  return retry
end
local counters, order, out, o = {}, {}, {}, 0
-- Per charge of the set being decided: its counter's total before it, its cost.
local before, costs = {}, {}
local a, k = 2, 1
for s = 1, tonumber(ARGV[1]) do
  local n = tonumber(ARGV[a])
  local a0, k0 = a + 1, k
  local refused, retry = nil, -1
  a = a0
  for i = 1, n do
    local z = KEYS[k]
    local cost, limit = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
    local c = counters[z]
    if c == nil then
      c = counter(z, tonumber(ARGV[a + 2]))
      counters[z] = c
    end
    if c[6] ~= s then c[6], c[7] = s, 0 end
    local total = c[1] + c[7]
    before[i], costs[i] = total, cost
    if total + cost > limit then
      refused = i
      if cost <= limit then retry = retryOf(z, c, total + cost - limit, tonumber(ARGV[a + 2])) end
      break
    end
    c[7] = c[7] + cost
    k, a = k + 1, a + 3
  end
  if refused == nil then
    out[o + 1], out[o + 2] = '1 -1 0', n
    o = o + 2
    for i = 1, n do
      local cost = costs[i]
      o = o + 1
      out[o] = before[i] + cost
      if cost > 0 then
        local z = KEYS[k0 + i - 1]
        local c = counters[z]
        if c[4] == 0 then order[#order + 1] = z end
        c[4], c[1] = c[4] + cost, c[1] + cost
        local window = tonumber(ARGV[a0 + 3 * i - 1])
        if window > c[5] then c[5] = window end
      end
    end
  else
    out[o + 1], out[o + 2], out[o + 3], out[o + 4] = '0', refused - 1, retry, refused
    o = o + 4
    for i = 1, refused do
      o = o + 1
      out[o] = before[i]
    end
  end
  k, a = k0 + n, a0 + 3 * n
end
if #order > 0 then
  local nowText = string.format('%d', now)
  for _, z in ipairs(order) do
    local c = counters[z]
    local til, longest = c[2], c[5]
    local moved = not til or tonumber(til) < now + longest
    if moved then til = string.format('%d', now + longest + math.min(longest, SLACK)) end
    local e = nowText .. ':' .. tostring(c[4])
    if c[2] then
      redis.call('RPUSH', z, e)
      redis.call('LSET', z, 0, header(c[1], til, c[3]))
    else
      redis.call('RPUSH', z, header(c[1], til, nowText), e)
    end
    if moved then redis.call('PEXPIREAT', z, til) end
  end
end
return table.concat(out, ' ')
`;
