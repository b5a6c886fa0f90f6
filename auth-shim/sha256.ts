/**
 * SHA-256 on whichever runtime the shim runs. Where Node's built-ins are at hand (the Node server, a Workers isolate
 * with nodejs_compat) their hash is used: it is synchronous, where a Web Crypto digest on Node is a job sent to the
 * thread pool and back, many times the cost for a key or an ETag's few bytes. Elsewhere, Web Crypto.
 */
type Data = string | Uint8Array<ArrayBuffer>;
type NodeCrypto = typeof import('node:crypto');

const nodeCrypto = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.(
  'node:crypto',
) as NodeCrypto | undefined;
const encoder = new TextEncoder();

/** The SHA-256 of a text (as UTF-8) or of bytes. */
export async function sha256(data: Data): Promise<Uint8Array> {
  if (nodeCrypto) return nodeCrypto.createHash('sha256').update(data).digest();
  return new Uint8Array(await crypto.subtle.digest('SHA-256', typeof data === 'string' ? encoder.encode(data) : data));
}

/** The SHA-256 of a text (as UTF-8) or of bytes, in hex. */
export async function sha256Hex(data: Data): Promise<string> {
  if (nodeCrypto) return nodeCrypto.createHash('sha256').update(data).digest('hex');
  let hex = '';
  for (const b of await sha256(data)) hex += b.toString(16).padStart(2, '0');
  return hex;
}
