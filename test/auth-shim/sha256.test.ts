import { describe, expect, it } from 'vitest';
import { sha256, sha256Hex } from '../../auth-shim/sha256.js';

// FIPS 180-2's test vector; the Workers suite (edge-suite.test.ts) runs the same code on Web Crypto.
const ABC = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';

describe('sha256', () => {
  it('hashes a text as its UTF-8 bytes, and bytes as they are, to the same digest', async () => {
    expect(await sha256Hex('abc')).toBe(ABC);
    expect(await sha256Hex(new TextEncoder().encode('abc') as Uint8Array<ArrayBuffer>)).toBe(ABC);
    expect(Buffer.from(await sha256('abc')).toString('hex')).toBe(ABC);
    expect(await sha256Hex('é')).toBe(await sha256Hex(new Uint8Array([0xc3, 0xa9])));
  });
});
