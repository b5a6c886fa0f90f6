/**
 * Load from a second process: autocannon against one URL for a bounded time (or, as `n<count>`, a bounded number
 * of requests); prints {rps, p50, p99, non2xx, bytes_per_response (headers and body as received)}.
 * With a rotation file (`{"header": "...", "values": [...]}`) each request carries the next value in that header,
 * so a load can spread over thousands of keys the way real traffic does.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

const [url, headersJson, seconds, connections, rotationFile] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string | undefined,
];
const rotation = rotationFile ? (JSON.parse(readFileSync(rotationFile, 'utf8')) as { header: string; values: string[] }) : undefined;
let next = 0;
const result = await autocannon({
  url,
  headers: JSON.parse(headersJson),
  connections: Number(connections),
  pipelining: 1,
  ...(seconds.startsWith('n') ? { amount: Number(seconds.slice(1)) } : { duration: Number(seconds) }),
  ...(rotation
    ? {
        requests: [
          {
            setupRequest: (req: autocannon.Request) => ({
              ...req,
              headers: { ...req.headers, [rotation.header]: rotation.values[next++ % rotation.values.length]! },
            }),
          },
        ],
      }
    : {}),
});
process.stdout.write(
  JSON.stringify({
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    bytes_per_response: result.requests.total ? Math.round(result.throughput.total / result.requests.total) : 0,
  }) + '\n',
);
