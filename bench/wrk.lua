-- The bench's wrk script (bench/load.ts runs it).
--   wrk ... -s bench/wrk.lua URL -- [ROTATION_FILE HEADER] [stop=N]
-- With a rotation file (one value a line), each request carries the next value in HEADER, so the load spreads
-- over thousands of keys as real traffic does. Every request is formatted once, in init(), and request() only picks
-- the next: building a request per call would cost the load generator more than the servers it measures.
-- With stop=N wrk exits after N responses, printing nothing (a warm-up that shows every key once): wrk's main
-- thread sleeps out the whole duration whatever its threads do, so the script ends the process itself. response()
-- is defined only then, since wrk parses headers and bodies for Lua only when the script asks for them.
-- done() prints one line, `wrk-json {...}`, that load.ts reads: counts, bytes and latencies in microseconds.

local requests = {}
local count = 0
local at = 0

local function with(extra)
  local h = {}
  for k, v in pairs(wrk.headers) do
    h[k] = v
  end
  for k, v in pairs(extra) do
    h[k] = v
  end
  return h
end

function init(args)
  local file, header, stopAfter
  for _, a in ipairs(args) do
    local n = a:match('^stop=(%d+)$')
    if n then
      stopAfter = tonumber(n)
    elseif not file then
      file = a
    else
      header = a
    end
  end
  if file then
    for value in io.lines(file) do
      if value ~= '' then
        count = count + 1
        requests[count] = wrk.format(nil, nil, with({ [header] = value }))
      end
    end
    if count == 0 then
      error(file .. ': no values to rotate')
    end
  else
    count = 1
    requests[1] = wrk.format()
  end
  if stopAfter then
    local seen = 0
    response = function()
      seen = seen + 1
      if seen >= stopAfter then
        io.write('wrk-warm ' .. seen .. '\n')
        io.stdout:flush()
        os.exit(0)
      end
    end
  end
end

function request()
  at = at % count + 1
  return requests[at]
end

function done(summary, latency)
  local e = summary.errors
  io.write(
    string.format(
      'wrk-json {"duration_us":%d,"requests":%d,"bytes":%d,"non2xx":%d,"errors":%d,"timeouts":%d,'
        .. '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}\n',
      summary.duration,
      summary.requests,
      summary.bytes,
      e.status,
      e.connect + e.read + e.write,
      e.timeout,
      latency:percentile(50),
      latency:percentile(90),
      latency:percentile(99),
      latency.max,
      latency.mean
    )
  )
end
