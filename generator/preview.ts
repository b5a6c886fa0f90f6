/**
 * `risk-readings preview`: the built tree as plain files (serve-handler, following the `v1` link), no auth, for
 * looking around. Only the API's files are served: paths under `/v1/`, listed as folders. The rest of the folder
 * (the quota counts with every key's hash, the parse cache, the trees kept beside `v1`, the lock) is not a URL.
 */
import { createServer, type Server } from 'node:http';
import handler from 'serve-handler';

/** 400 for a path that does not decode or holds a NUL, 404 outside `/v1/`; null for a path to serve. */
function refusal(url: string | undefined): [number, string] | null {
  const path = (url ?? '/').split('?')[0]!;
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return [400, 'bad request: the path does not decode'];
  }
  if (decoded.includes('\0')) return [400, 'bad request: the path holds a NUL'];
  if (!decoded.startsWith('/v1/') || decoded.split('/').some((segment) => segment === '..' || segment.startsWith('.')))
    return [404, 'not found: preview serves the files under /v1/ only'];
  return null;
}

export function preview(publicDir: string, port: number, host = '127.0.0.1'): Promise<Server> {
  const server = createServer((req, res) => {
    const refused = refusal(req.url);
    if (refused) {
      res.writeHead(refused[0], { 'content-type': 'text/plain; charset=utf-8' }).end(`${refused[1]}\n`);
      return;
    }
    void handler(req, res, { public: publicDir, directoryListing: ['/v1', '/v1/**'], cleanUrls: false, etag: true, symlinks: true });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
