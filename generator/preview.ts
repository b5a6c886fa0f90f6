/** `risk-readings preview`: the built tree as plain files (serve-handler, following the `v1` link), no auth, for looking around. */
import { createServer, type Server } from 'node:http';
import handler from 'serve-handler';

export function preview(publicDir: string, port: number, host = '127.0.0.1'): Promise<Server> {
  const server = createServer((req, res) =>
    handler(req, res, { public: publicDir, directoryListing: true, cleanUrls: false, etag: true, symlinks: true }),
  );
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
