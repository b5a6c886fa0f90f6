/** `GET /v1/health`: not wrapped in the envelope. */
import { API_VERSION, DISCLAIMER } from './envelope.js';

export const SCHEMA_VERSION = 1;

export function health(renderVersion: string) {
  return { status: 'ok', api_version: API_VERSION, render_version: renderVersion, schema: SCHEMA_VERSION, disclaimer: DISCLAIMER };
}
