/** A request to a Node server exactly as sent and answered: fetch would add an Accept-Encoding and decode codings. */
import { request as httpRequest } from 'node:http';

export function rawRequest(
  base: string,
  path: string,
  init: { headers?: Record<string, string>; method?: string } = {},
): Promise<Response> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: init.method ?? 'GET', headers: init.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
        const status = res.statusCode!;
        const empty = [204, 304].includes(status) || init.method === 'HEAD';
        resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers }));
      });
    });
    req.on('error', reject);
    req.end();
  });
}
