-- SPDX-License-Identifier: MIT
--
-- sysbench workload for test/compat/sysbench.sh: each thread prepares
--   SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = ?
-- once (a server-side prepared statement under --db-ps-mode=auto) and
-- executes it with a VARCHAR parameter for every event, re-binding only
-- the value, so the driver sends the parameter types once and
-- new_params_bind_flag=0 afterwards. An event fails unless exactly one row
-- comes back. Each thread also reads its names back as text with
-- query_row and fails unless the value is a non-negative integer. Any SQL
-- error is fatal (--mysql-ignore-errors is left at "none").

local NAMES = { "allocated", "active", "resident", "mapped", "narenas" }
local SQL = "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = ?"

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   for _, name in ipairs(NAMES) do
      local v = con:query_row(
         "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = '"
            .. name .. "'")
      if v == nil or not string.match(v, "^[0-9]+$") then
         error(string.format("text read of '%s' returned %s", name, tostring(v)))
      end
   end
   stmt = con:prepare(SQL)
   param = stmt:bind_create(sysbench.sql.type.VARCHAR, 64)
   stmt:bind_param(param)
end

function event()
   local name = NAMES[sysbench.rand.uniform(1, #NAMES)]
   param:set(name)
   local rs = stmt:execute()
   if rs == nil or rs.nrows ~= 1 then
      error(string.format("prepared point select of '%s' returned %s rows",
                          name, rs and tostring(rs.nrows) or "no result set"))
   end
   rs:free()
end

function thread_done()
   stmt:close()
   con:disconnect()
end
