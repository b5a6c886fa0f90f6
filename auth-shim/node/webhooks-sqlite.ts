/**
 * Webhook endpoints and their delivery state in the Node server's SQLite database (decisions 97 and 108), beside
 * the quota counts: written at once, a statement each, so a process killed at any instant leaves every step it
 * took. Nothing is cached: `risk-readings webhooks disable` in another process is seen at the next look. The tables
 * are in docs/shim.md; the lists and the message in flight are JSON text.
 */
import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import { WEBHOOK_ATTEMPTS_KEPT } from '../../generator/contract/webhooks.js';
import { LocalClaims, type Attempt, type EndpointFields, type EndpointRecord, type WebhookStore } from '../webhooks/store.js';

const WEBHOOK_TABLES = `
CREATE TABLE IF NOT EXISTS webhook_endpoints (id TEXT PRIMARY KEY, owner TEXT NOT NULL, plan TEXT NOT NULL,
  url TEXT NOT NULL, fields TEXT NOT NULL, symbols TEXT NOT NULL, universes TEXT NOT NULL, description TEXT,
  enabled INTEGER NOT NULL, disabled_reason TEXT, created_at TEXT NOT NULL, secrets TEXT NOT NULL,
  delivered_through INTEGER NOT NULL, pending TEXT) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS webhook_endpoints_owner ON webhook_endpoints (owner);
CREATE TABLE IF NOT EXISTS webhook_attempts (seq INTEGER PRIMARY KEY AUTOINCREMENT, endpoint TEXT NOT NULL,
  message_id TEXT NOT NULL, attempt INTEGER NOT NULL, at TEXT NOT NULL, status INTEGER, error TEXT, ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS webhook_attempts_endpoint ON webhook_attempts (endpoint, seq);
`;

/** The record's fields kept as JSON text, and the one kept as 0 or 1. */
const JSON_COLUMNS = new Set(['fields', 'symbols', 'universes', 'secrets', 'pending']);
const COLUMNS = [
  'id',
  'owner',
  'plan',
  'url',
  'fields',
  'symbols',
  'universes',
  'description',
  'enabled',
  'disabled_reason',
  'created_at',
  'secrets',
  'delivered_through',
  'pending',
] as const;

const column = (name: string, v: unknown): SQLInputValue =>
  JSON_COLUMNS.has(name) ? (v === null ? null : JSON.stringify(v)) : name === 'enabled' ? (v ? 1 : 0) : (v as SQLInputValue);

function record(row: Record<string, SQLInputValue>): EndpointRecord {
  const r: Record<string, unknown> = {};
  for (const c of COLUMNS) {
    const v = row[c];
    r[c] = JSON_COLUMNS.has(c)
      ? v === null
        ? null
        : JSON.parse(String(v))
      : c === 'enabled'
        ? v === 1
        : c === 'delivered_through'
          ? Number(v)
          : v;
  }
  return r as unknown as EndpointRecord;
}

export class SqliteWebhookStore implements WebhookStore {
  /** One process delivers from a database (it holds the quota lock): its claims need not outlive it. */
  private readonly claims = new LocalClaims();

  /** `source`: the database, or what holds it (the quota store, which opens it again if it is removed under it). */
  constructor(private readonly source: DatabaseSync | { readonly db: DatabaseSync }) {
    this.db.exec(WEBHOOK_TABLES);
  }

  private get db(): DatabaseSync {
    return 'db' in this.source ? this.source.db : this.source;
  }

  list(owner?: string): Promise<EndpointRecord[]> {
    const rows =
      owner === undefined
        ? this.db.prepare('SELECT * FROM webhook_endpoints ORDER BY created_at, id').all()
        : this.db.prepare('SELECT * FROM webhook_endpoints WHERE owner = ? ORDER BY created_at, id').all(owner);
    return Promise.resolve(rows.map(record));
  }

  get(id: string): Promise<EndpointRecord | null> {
    const row = this.db.prepare('SELECT * FROM webhook_endpoints WHERE id = ?').get(id);
    return Promise.resolve(row ? record(row) : null);
  }

  add(e: EndpointRecord, max: number): Promise<boolean> {
    const values = COLUMNS.map((c) => column(c, e[c]));
    // The count and the insert in one statement: two requests at once cannot both take the last place.
    const r = this.db
      .prepare(
        `INSERT INTO webhook_endpoints (${COLUMNS.join(', ')}) SELECT ${COLUMNS.map(() => '?').join(', ')}
         WHERE (SELECT count(*) FROM webhook_endpoints WHERE owner = ?) < ?`,
      )
      .run(...values, e.owner, max);
    return Promise.resolve(r.changes === 1);
  }

  set(id: string, fields: EndpointFields): Promise<boolean> {
    const names = Object.keys(fields).filter((k) => (COLUMNS as readonly string[]).includes(k) && k !== 'id');
    if (!names.length) return this.get(id).then((e) => e !== null);
    const sql = `UPDATE webhook_endpoints SET ${names.map((n) => `${n} = ?`).join(', ')} WHERE id = ?`;
    const r = this.db.prepare(sql).run(...names.map((n) => column(n, fields[n as keyof EndpointFields])), id);
    return Promise.resolve(r.changes === 1);
  }

  remove(id: string): Promise<boolean> {
    this.db.prepare('DELETE FROM webhook_attempts WHERE endpoint = ?').run(id);
    return Promise.resolve(this.db.prepare('DELETE FROM webhook_endpoints WHERE id = ?').run(id).changes === 1);
  }

  logAttempt(id: string, a: Attempt): Promise<void> {
    this.db
      .prepare('INSERT INTO webhook_attempts (endpoint, message_id, attempt, at, status, error, ms) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(id, a.message_id, a.attempt, a.at, a.status, a.error, Math.round(a.ms));
    this.db
      .prepare(
        'DELETE FROM webhook_attempts WHERE endpoint = ? AND seq <= (SELECT seq FROM webhook_attempts WHERE endpoint = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)',
      )
      .run(id, id, WEBHOOK_ATTEMPTS_KEPT);
    return Promise.resolve();
  }

  attempts(id: string): Promise<Attempt[]> {
    const rows = this.db
      .prepare('SELECT message_id, attempt, at, status, error, ms FROM webhook_attempts WHERE endpoint = ? ORDER BY seq DESC LIMIT ?')
      .all(id, WEBHOOK_ATTEMPTS_KEPT);
    return Promise.resolve(rows.map((r) => ({ ...r, attempt: Number(r.attempt), ms: Number(r.ms) }) as unknown as Attempt));
  }

  claim(id: string, holder: string, ms: number, now: number): Promise<boolean> {
    return Promise.resolve(this.claims.claim(id, holder, ms, now));
  }

  release(id: string, holder: string): Promise<void> {
    return Promise.resolve(this.claims.release(id, holder));
  }
}
