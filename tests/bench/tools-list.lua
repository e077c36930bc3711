-- wrk script for scripts/bench.sh: POST a tools/list to /mcp with the
-- streamable HTTP headers, and write the run's figures as one JSON object.
--
--   BENCH_SESSION_ID=<id> BENCH_WRK_JSON=out.json wrk -s tests/bench/tools-list.lua URL
--   BENCH_WIRE=modern BENCH_WRK_JSON=out.json wrk -s tests/bench/tools-list.lua URL
--
-- BENCH_WIRE        2025 (default): the 2025-11-25 wire, MCP-Protocol-Version
--                   2025-11-25 and the Mcp-Session-Id below; modern: the
--                   2026-07-28 wire, params._meta naming the revision and
--                   the client's capabilities, MCP-Protocol-Version
--                   2026-07-28 and Mcp-Method: tools/list, and no session
-- BENCH_SESSION_ID  Mcp-Session-Id sent with every 2025 request (a
--                   stateless server ignores it)
-- BENCH_WRK_JSON    where done() writes the figures (nothing when unset)
--
-- No response() callback on purpose: defining one makes wrk hand every body
-- to Lua, which would slow the measurement down; bench.sh checks answers
-- with a separate request before and after each run.

local wire = os.getenv("BENCH_WIRE") or "2025"

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
if wire == "modern" then
	wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{'
		.. '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
		.. '"io.modelcontextprotocol/clientCapabilities":{}}}}'
	wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
	wrk.headers["Mcp-Method"] = "tools/list"
elseif wire == "2025" then
	wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
	wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
	wrk.headers["Mcp-Session-Id"] = os.getenv("BENCH_SESSION_ID") or ""
else
	error("BENCH_WIRE must be 2025 or modern, not '" .. wire .. "'")
end

-- Latency figures arrive in microseconds; written in milliseconds.
local function ms(us)
	return string.format("%.3f", us / 1000)
end

function done(summary, latency, requests)
	local path = os.getenv("BENCH_WRK_JSON")
	if path == nil or path == "" then
		return
	end
	local e = summary.errors
	local secs = summary.duration / 1e6
	local parts = {
		string.format('"requests":%d', summary.requests),
		string.format('"duration_s":%.3f', secs),
		string.format('"requests_per_s":%.2f', secs > 0 and summary.requests / secs or 0),
		string.format('"bytes":%d', summary.bytes),
		string.format(
			'"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"non_2xx_3xx":%d}',
			e.connect, e.read, e.write, e.timeout, e.status
		),
		string.format(
			'"latency_ms":{"mean":%s,"stdev":%s,"min":%s,"max":%s,"p50":%s,"p90":%s,"p99":%s}',
			ms(latency.mean), ms(latency.stdev), ms(latency.min), ms(latency.max),
			ms(latency:percentile(50)), ms(latency:percentile(90)), ms(latency:percentile(99))
		),
	}
	local f = assert(io.open(path, "w"))
	f:write("{" .. table.concat(parts, ",") .. "}\n")
	f:close()
end
