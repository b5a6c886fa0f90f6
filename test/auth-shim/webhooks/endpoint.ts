/** A webhook endpoint record for the tests that put one in a store directly: no filters, a fresh secret, pro. */
import { randomBytes } from 'node:crypto';
import { newSecret } from '../../../auth-shim/webhooks/sign.js';
import type { EndpointRecord } from '../../../auth-shim/webhooks/store.js';

export const sampleEndpoint = (fields: Partial<EndpointRecord> = {}): EndpointRecord => ({
  id: `ep_${randomBytes(12).toString('hex')}`,
  owner: 'label:acme',
  plan: 'pro',
  url: 'https://hooks.example.com/rr',
  fields: [],
  symbols: [],
  universes: [],
  description: null,
  enabled: true,
  disabled_reason: null,
  created_at: '2026-10-16T00:00:00Z',
  secrets: [{ key: newSecret(), until: null }],
  delivered_through: 0,
  pending: null,
  ...fields,
});
