-- wrk script for run.py's browser-unique scenario: every request a head of its own, about
-- 620 bytes, like a desktop browser's (Chrome's) fetch() of a resource on a kept-alive
-- connection.
--
--   wrk -t1 -c50 -d5s -s benchmarks/wrk/browser_unique.lua http://127.0.0.1:19180/1k.bin
--
-- What makes each head unique: `n`, this thread's request counter, `tid`, the thread's
-- number (given by setup()), and `run`, 8 hex digits read once per wrk run from
-- /dev/urandom (two threads never send the same head, two runs almost never). All three
-- are in the query's tracking parameter (gclid) and in the Cookie's session id; the counter
-- is also the Referer's page and sets the item id and the other cookies. The path stays the
-- URL's (the 1 KiB file): nginx serves a static file whatever the query string.
--
-- The head is one string.format of a fixed template, with the fields in the order and
-- the case of a browser's; wrk.format() is not used for it because it emits the fields in
-- Lua's table order (Host second, Connection first, ...), and costs the client (on CPU 0)
-- more per request.

-- run_id() and setup(): the thread number `tid` and the run id `run` (unique.lua)
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "unique.lua")

local template = table.concat({
   "GET %s?item=%d&gclid=%s%02x%08x HTTP/1.1",
   "Host: %s",
   "Connection: keep-alive",
   'sec-ch-ua: "Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99"',
   "sec-ch-ua-mobile: ?0",
   "User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
      .. "Chrome/124.0.0.0 Safari/537.36",
   'sec-ch-ua-platform: "Windows"',
   "Accept: */*",
   "Sec-Fetch-Site: same-origin",
   "Sec-Fetch-Mode: cors",
   "Sec-Fetch-Dest: empty",
   "Referer: http://%s/list?page=%d",
   "Accept-Encoding: gzip, deflate, br",
   "Accept-Language: en-US,en;q=0.9",
   "Cookie: sid=%s%02x%08x; cart=%d; _gid=%d",
   "", ""}, "\r\n")

-- init() runs in each thread's own Lua state (tid and run were set by setup())
function init(args)
   tid = tid or 1
   run = run or run_id()
   n = 0
   host = wrk.headers["Host"]
   path = wrk.path:match("^[^?]*")
end

function request()
   n = n + 1
   return string.format(template,
      path, 100000 + (n * 7919) % 900000, run, tid, n,
      host,
      host, n,
      run, tid, n, n % 9, 1000000000 + (n * 7) % 1000000000)
end
