/** Load from a second process: autocannon against one URL for a bounded time; prints {rps, p50, p99, non2xx}. */
import autocannon from 'autocannon';

const [url, headersJson, seconds, connections] = process.argv.slice(2) as [string, string, string, string];
const result = await autocannon({ url, headers: JSON.parse(headersJson), duration: Number(seconds), connections: Number(connections), pipelining: 1 });
process.stdout.write(JSON.stringify({
  rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99,
  requests: result.requests.total, non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts,
}) + '\n');
