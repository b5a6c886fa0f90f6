/** `GET /v1/health`: not wrapped in the envelope. The shim restates `status` at request time (decision 26). */
import type { Health } from '../contract/shapes.js';
import { API_VERSION, DISCLAIMER } from './envelope.js';

const SCHEMA_VERSION = 1;

export function health(renderVersion: string, builtAt: string, newestReading: string | null): Health {
  return {
    status: 'ok',
    api_version: API_VERSION,
    render_version: renderVersion,
    schema: SCHEMA_VERSION,
    disclaimer: DISCLAIMER,
    built_at: builtAt,
    newest_reading: newestReading,
  };
}
