/**
 * The CLI's side of an edge deployment's operator routes (decisions 98 and 108): one request to the worker, the
 * operator token in its Authorization header (never in the URL, never in a message), no redirect followed (it would
 * carry the token elsewhere), and every way it can fail said as what to do. `usage` and `webhooks` read through it.
 */

/** The worker cannot be asked, or did not answer as its operator route does: the commands' exit 1. */
export class OperatorUnreachable extends Error {}

/** Whether a store names an edge deployment: the worker's URL, http(s). */
export const isWorkerUrl = (spec: string): boolean => /^https?:\/\//.test(spec);

/** How long the worker has to answer the operator's request. */
const WORKER_TIMEOUT_MS = 30_000;

/** The JSON answer of the worker at `url` to the operator's request for `path`. */
export async function operatorRequest(
  url: string,
  path: string,
  token: string,
  init: { method?: string; body?: unknown } = {},
): Promise<unknown> {
  const fail = (why: string, cause?: unknown) => new OperatorUnreachable(`${url}: ${why}`, { cause });
  let res: Response;
  try {
    res = await fetch(new URL(path, url), {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      redirect: 'manual',
      signal: AbortSignal.timeout(WORKER_TIMEOUT_MS),
    });
  } catch (e) {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    const why =
      err.name === 'TimeoutError'
        ? `no answer within ${WORKER_TIMEOUT_MS / 1000} s`
        : (err.cause?.code ?? err.cause?.message ?? err.message);
    throw fail(`the worker cannot be reached (${why})`, e);
  }
  const base = path.split('?')[0]!;
  if (res.status === 404) {
    // The route's own 404 (no such endpoint) says so; the API's, met when the route is not there, says why it is not.
    const refused = ((await res.json().catch(() => null)) as { error?: { message?: string } } | null)?.error?.message;
    if (refused?.startsWith('No webhook endpoint')) throw fail(refused);
    throw fail(
      `the worker has no operator route for this token (404): RISK_READINGS_OPERATOR_TOKEN is not its OPERATOR_TOKEN, ` +
        'or that secret is not set (npx wrangler secret put OPERATOR_TOKEN, docs/edge.md)',
    );
  }
  if (res.status >= 300 && res.status < 400)
    throw fail(`the worker answered a redirect (${res.status}) to ${res.headers.get('location') ?? 'nowhere'}; give the worker's own URL`);
  if (!res.ok) throw fail(`the worker answered ${res.status} for ${base}`);
  try {
    return await res.json();
  } catch (e) {
    throw fail(`the worker's answer is not JSON (${(e as Error).message})`, e);
  }
}
