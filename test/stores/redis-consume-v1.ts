/**
 * The counter script as it was before the per-call cost was cut (issue 25 target 4): kept only so that
 * redis-consume-same.test.ts can check that the current one decides, answers and writes alike on random
 * charge sequences. Not used by the stores.
 */
export const CONSUME_V1 = `
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
