-- wrk script for run.py's api-post-unique scenario: POSTs of a 1 KiB JSON body, each with a
-- head of its own (a bearer token and a request id per request), on kept-alive connections,
-- like an API client's. The URL's path is the origin's /upload, which answers 204.
--
--   wrk -t1 -c50 -d5s -s benchmarks/wrk/api_post_unique.lua http://127.0.0.1:19180/upload
--
-- What makes each request unique: `n`, this thread's request counter, `tid`, the thread's
-- number (given by setup()), and `run`, 8 hex digits read once per wrk run from
-- /dev/urandom. All three are in `Authorization: Bearer <token>` (a JWT-shaped token: they
-- are in its payload, and its signature changes with the counter), in `X-Request-Id` (a
-- UUID) and in the body, whose order id, customer and quantities change with the counter
-- too. The body is padded to exactly BODY_SIZE bytes of JSON.
--
-- The request is one string.format of a fixed template (fields in a fixed order);
-- wrk.format() is not used for it because it emits the fields in Lua's table order, and
-- costs the client (on CPU 0) more per request.

local BODY_SIZE = 1024

-- run_id() and setup(): the thread number `tid` and the run id `run` (unique.lua)
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "unique.lua")

local head = table.concat({
   "POST %s HTTP/1.1",
   "Host: %s",
   "Connection: keep-alive",
   "User-Agent: orders-sync/3.2.1 okhttp/4.12.0",
   "Accept: application/json",
   "Accept-Encoding: gzip",
   "Content-Type: application/json",
   "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJzdmMtb3JkZXJzIiwianRpIjoi%s%02x%08xIn0."
      .. "%08x%08x%08x%08x%08x",
   "X-Request-Id: %s-%04x-4%03x-8%03x-%012x",
   "Content-Length: %d",
   "", ""}, "\r\n")

local body_start = '{"request_id":"%s-%04x-4%03x-8%03x-%012x","order":{"id":%d,"customer":"cust-%s%02x%06x",'
   .. '"currency":"EUR","items":[{"sku":"SKU-%06d","qty":%d,"price":19.99},{"sku":"SKU-%06d","qty":%d,'
   .. '"price":4.5},{"sku":"SKU-%06d","qty":%d,"price":129.0}],"shipping":{"name":"Jane Doe","street":'
   .. '"Hauptstrasse %d","city":"Berlin","zip":"10115","country":"DE"},"tags":["mobile","express"],"note":"'
local body_end = '"}}'
local padding = string.rep("lorem ipsum dolor sit amet ", 40)

-- init() runs in each thread's own Lua state (tid and run were set by setup())
function init(args)
   tid = tid or 1
   run = run or run_id()
   n = 0
   host = wrk.headers["Host"]
   path = wrk.path
end

local function mix(x, k)
   -- a cheap scramble for the token's signature: looks random, the counter makes it unique
   return (x * k) % 4294967296
end

function request()
   n = n + 1
   local r1, r2 = n % 4096, (n * 31) % 4096
   local body = string.format(body_start, run, tid, r1, r2, n, 5000000 + n, run, tid, n % 16777216,
                              n % 999983, 1 + n % 5, (n * 7) % 999983, 1 + n % 3, (n * 13) % 999983,
                              1 + n % 2, 1 + n % 200)
   body = body .. padding:sub(1, BODY_SIZE - #body - #body_end) .. body_end
   return string.format(head, path, host,
                        run, tid, n, mix(n, 2654435761), mix(n + tid, 2246822519), mix(n, 3266489917),
                        mix(n * 3, 668265263), mix(n * 5, 374761393),
                        run, tid, r1, r2, n,
                        #body) .. body
end
