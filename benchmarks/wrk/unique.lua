-- What run.py's unique-head wrk scripts (browser_unique.lua, api_post_unique.lua) share:
-- every wrk thread learns its number `tid` and the run's id `run` (8 hex digits read once
-- per wrk run from /dev/urandom), which with a per-thread counter make every head unique
-- across threads and runs. Loaded with dofile() from the script's own folder.

local function run_id()
   local f = io.open("/dev/urandom", "rb")
   local s = f and f:read(4)
   if f then f:close() end
   if s and #s == 4 then
      return string.format("%02x%02x%02x%02x", s:byte(1, 4))
   end
   return string.format("%08x", (os.time() * 1000 + math.floor(os.clock() * 1000)) % 4294967296)
end

-- setup() runs in wrk's main Lua state, once per thread, before the threads start; it
-- sets the globals `tid` and `run` of the thread's own Lua state
local threads, this_run = 0, nil

function setup(thread)
   this_run = this_run or run_id()
   threads = threads + 1
   thread:set("tid", threads)
   thread:set("run", this_run)
end
