"""The Lua scripts of the Redis Streams transport: each runs atomically on the server, so two
fetchers of one consumer never claim one entry twice and a publish is stored at most once per
dedup window. Times are the server's (`TIME`), never a client's clock."""

from __future__ import annotations

from typing import Final

_NOW: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: stream, dedup key. ARGV: dedup window (ms), then the entry's field, value pairs.
PUBLISH: Final = """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('XADD', KEYS[1], '*', unpack(ARGV, 2))
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return 1
"""

# The entries a fetcher gets again, at most `batch`: those whose retry delay passed, and those idle
# past ack_wait (their fetcher died) unless a retry keeps them off longer. XAUTOCLAIM ... JUSTID moves an idle
# entry to this fetcher without counting a delivery (and restarts its idle time, so an entry kept
# off by a long retry comes up again only once per ack_wait); XCLAIM then counts the delivery.
# KEYS: stream, retry set. ARGV: group, member, ack_wait (ms), batch.
# Returns {id, {field, value, ...}, delivered} for each entry handed out.
CLAIM: Final = (
    _NOW
    + """
local batch = tonumber(ARGV[4])
local wanted = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, batch)
local seen = {}
for _, id in ipairs(wanted) do seen[id] = true end
if #wanted < batch then
  local idle = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], '0-0',
    'COUNT', batch - #wanted, 'JUSTID')
  for _, id in ipairs(idle[2]) do
    local due = redis.call('ZSCORE', KEYS[2], id)
    if not seen[id] and (not due or tonumber(due) <= now) then
      seen[id] = true
      wanted[#wanted + 1] = id
    end
  end
end
if #wanted == 0 then return {} end
redis.call('ZREM', KEYS[2], unpack(wanted))
local out = {}
for _, entry in ipairs(redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, unpack(wanted))) do
  if entry and entry[2] then
    local pending = redis.call('XPENDING', KEYS[1], ARGV[1], entry[1], entry[1], 1)
    out[#out + 1] = {entry[1], entry[2], pending[1][4]}
  end
end
return out
"""
)

# Keep one entry off until `delay` passed. KEYS: stream, retry set. ARGV: group, member, id,
# delay (ms). Returns 0 when the entry is no longer pending (acked meanwhile).
RETRY: Final = (
    _NOW
    + """
local mine = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
if #mine == 0 then return 0 end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[3])
return 1
"""
)

# `work` retention: drop the entries every group has acked, i.e. those below the oldest entry
# still pending or not yet delivered in any group (cost: one XPENDING a group, plus the entries
# removed). KEYS: stream. Returns the number of entries removed.
TRIM: Final = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
if #groups == 0 then return 0 end
local low_ms, low_seq
for _, g in ipairs(groups) do
  local info = {}
  for i = 1, #g, 2 do info[g[i]] = g[i + 1] end
  local ms, seq
  if info['pending'] > 0 then
    local summary = redis.call('XPENDING', KEYS[1], info['name'])
    ms, seq = string.match(summary[2], '(%d+)-(%d+)')
    ms, seq = tonumber(ms), tonumber(seq)
  else
    ms, seq = string.match(info['last-delivered-id'], '(%d+)-(%d+)')
    ms, seq = tonumber(ms), tonumber(seq) + 1
  end
  if not low_ms or ms < low_ms or (ms == low_ms and seq < low_seq) then
    low_ms, low_seq = ms, seq
  end
end
return redis.call('XTRIM', KEYS[1], 'MINID', string.format('%d-%d', low_ms, low_seq))
"""
