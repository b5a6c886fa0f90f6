/**
 * `GET /docs` (decision 24): Swagger UI, from the `swagger-ui-dist` package, rendering this origin's
 * `/v1/openapi.json`, with "Try it out" sending requests to the same origin, whatever origin that is. The page, its
 * script and its styles are all served here; the Content-Security-Policy lets the page reach no other host.
 * Runtime-neutral: each runtime hands in the package's files (`DocsFiles`).
 */
import type { ShimRequest, ShimResponse } from './exchange.js';
import type { OriginFile } from './origin.js';
import { fileResponse } from './representation.js';

/** The package files the page needs, by name in `swagger-ui-dist` (the edge deploys exactly these beside it). */
export const DOCS_FILES = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
} as const;
export type DocsFileName = keyof typeof DOCS_FILES;

/** A package file with its tag, and compressed variants where the runtime made them. */
export type DocsFiles = (name: DocsFileName) => OriginFile | Promise<OriginFile>;

/**
 * The package files as each runtime reads them (`load`), each read once and kept; a read that fails is tried again
 * at the next request rather than kept as a failure.
 */
export function loadedOnce(load: (name: DocsFileName) => Promise<OriginFile>): DocsFiles {
  const files = new Map<DocsFileName, Promise<OriginFile>>();
  return (name) => {
    let f = files.get(name);
    if (!f) {
      files.set(name, (f = load(name)));
      f.catch(() => files.delete(name));
    }
    return f;
  };
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Risk Readings API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
<div id="docs"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

/**
 * The page's script. "Try it out" calls the document's first server, and a tree built with `--public-url` names the
 * public host there, which this page's Content-Security-Policy does not let it reach from another origin (staging,
 * a laptop). So the page renders the document with this origin as its first server and the document's own servers
 * after it (the served document itself is unchanged: the public URL stays its first server). validatorUrl null:
 * Swagger UI would otherwise send the document to validator.swagger.io.
 */
const INIT = `const here = window.location.origin;
const elsewhere = (server) => new URL(server.url, here).href.replace(/\\/$/, '') !== here;
fetch('/v1/openapi.json')
  .then((res) => {
    if (!res.ok) throw new Error('/v1/openapi.json answered ' + res.status);
    return res.json();
  })
  .then((spec) => {
    const own = (spec.servers || []).filter(elsewhere).map((server) => ({
      ...server,
      description: server.description || (new URL(server.url, here).origin === here ? 'on this origin' : 'the published address; this page calls its own origin only'),
    }));
    spec.servers = [{ url: here, description: 'this origin: "Try it out" sends its requests here' }, ...own];
    window.ui = SwaggerUIBundle({
      spec,
      dom_id: '#docs',
      deepLinking: true,
      validatorUrl: null,
      tryItOutEnabled: true,
      displayRequestDuration: true,
    });
  })
  .catch((e) => {
    document.getElementById('docs').textContent = 'The API description could not be loaded: ' + e.message;
  });
`;

const CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";
const HEADERS = { 'Cache-Control': 'public, max-age=300', 'X-Content-Type-Options': 'nosniff' };

const encoder = new TextEncoder();
const text = (body: string, headers: Record<string, string>): ShimResponse => {
  const bytes = encoder.encode(body) as Uint8Array<ArrayBuffer>;
  return { status: 200, headers: { ...headers, 'Content-Length': String(bytes.byteLength), ...HEADERS }, body: bytes, code: null };
};

/** The docs response for a path under /docs, or null when the path is not one of the page's. */
export async function docsResponse(
  request: ShimRequest,
  pathname: string,
  files: DocsFiles,
  extra: Record<string, string> = {},
): Promise<ShimResponse | null> {
  if (pathname === '/docs' || pathname === '/docs/')
    return text(PAGE, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': CSP, ...extra });
  if (pathname === '/docs/init.js') return text(INIT, { 'Content-Type': 'text/javascript; charset=utf-8', ...extra });
  const name = pathname.slice('/docs/'.length);
  if (!pathname.startsWith('/docs/') || !Object.hasOwn(DOCS_FILES, name)) return null;
  return fileResponse(request, await files(name as DocsFileName), {
    'Content-Type': DOCS_FILES[name as DocsFileName],
    ...HEADERS,
    ...extra,
  });
}
