/**
 * The inbox's audit log in a database, so the "Answered" view survives a restart and every replica reads
 * the same history: one append-only table (`toolgate_inbox_audit`) in SQLite (better-sqlite3) or
 * PostgreSQL (pg), both optional peers loaded only when asked for. Rows are read back newest first, paged
 * by their sequence number.
 */
import { describe } from '../names.js';
import type { InboxAuditEntry, InboxAuditLog, InboxAuditRecord } from './context.js';
import { parseJsonText } from '../json-text.js';

/** An audit log that can be read back, and closed. */
export interface InboxAuditStore extends Required<InboxAuditLog> {
  write(record: InboxAuditRecord): Promise<void>;
  close(): Promise<void>;
}

const TYPES = new Set(['approval_answered', 'approval_answer_refused', 'approval_expired', 'approval_outcome']);

function entryOf(seq: string | number, json: unknown): InboxAuditEntry | null {
  try {
    const record = (typeof json === 'string' ? parseJsonText(json) : json) as InboxAuditRecord;
    if (typeof record !== 'object' || record === null || !TYPES.has(record.type)) return null;
    return { ...record, seq: String(seq) };
  } catch {
    return null;
  }
}

function checkLimit(query: { readonly before?: string; readonly limit: number }): {
  before: number | null;
  limit: number;
} {
  const limit = Math.floor(query.limit);
  if (!(limit >= 1 && limit <= 1000))
    throw new TypeError(`audit read "limit" must be 1 to 1000, got ${describe(query.limit)}`);
  if (query.before === undefined) return { before: null, limit };
  const before = Number(query.before);
  if (!Number.isSafeInteger(before))
    throw new TypeError(`audit read "before" must be a sequence number, got ${describe(query.before)}`);
  return { before, limit };
}

async function sqliteAudit(file: string): Promise<InboxAuditStore> {
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(file);
  db.pragma('busy_timeout = 5000');
  if (file !== ':memory:') db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE IF NOT EXISTS toolgate_inbox_audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL,
    approval TEXT NOT NULL, record TEXT NOT NULL)`);
  const insert = db.prepare('INSERT INTO toolgate_inbox_audit (at, approval, record) VALUES (?, ?, ?)');
  const newest = db.prepare('SELECT seq, record FROM toolgate_inbox_audit ORDER BY seq DESC LIMIT ?');
  const older = db.prepare('SELECT seq, record FROM toolgate_inbox_audit WHERE seq < ? ORDER BY seq DESC LIMIT ?');
  return {
    async write(record) {
      insert.run(record.at, record.approvalId, JSON.stringify(record));
    },
    async read(query) {
      const { before, limit } = checkLimit(query);
      const rows = (before === null ? newest.all(limit) : older.all(before, limit)) as {
        seq: number;
        record: string;
      }[];
      return rows.map((r) => entryOf(r.seq, r.record)).filter((e): e is InboxAuditEntry => e !== null);
    },
    async close() {
      db.close();
    },
  };
}

async function postgresAudit(connectionString: string, schema: string): Promise<InboxAuditStore> {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema))
    throw new TypeError(`the audit log's schema must be an SQL identifier, got ${describe(schema)}`);
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString, max: 4 });
  const table = `"${schema}".toolgate_inbox_audit`;
  try {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await pool.query(`CREATE TABLE IF NOT EXISTS ${table} (seq BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL,
      approval TEXT NOT NULL, record JSONB NOT NULL)`);
  } catch (error) {
    await pool.end();
    throw error;
  }
  return {
    async write(record) {
      await pool.query(`INSERT INTO ${table} (at, approval, record) VALUES ($1, $2, $3)`, [
        record.at,
        record.approvalId,
        JSON.stringify(record),
      ]);
    },
    async read(query) {
      const { before, limit } = checkLimit(query);
      const { rows } =
        before === null
          ? await pool.query<{ seq: string; record: unknown }>(
              `SELECT seq, record FROM ${table} ORDER BY seq DESC LIMIT $1`,
              [limit],
            )
          : await pool.query<{ seq: string; record: unknown }>(
              `SELECT seq, record FROM ${table} WHERE seq < $1 ORDER BY seq DESC LIMIT $2`,
              [before, limit],
            );
      return rows.map((r) => entryOf(r.seq, r.record)).filter((e): e is InboxAuditEntry => e !== null);
    },
    async close() {
      await pool.end();
    },
  };
}

/**
 * Opens the inbox's audit log: `sqlite:<file>` (one machine) or `postgres://…` (every replica; `schema`
 * holds the table, default `toolgate`). Give it to `createInbox({ audit })` in every process that answers
 * or resumes, and the "Answered" view shows the same history everywhere, across restarts.
 *
 * @example
 * const audit = await openInboxAudit('postgres://inbox@db/approvals');
 * const inbox = createInbox({ secret, store: pg.approvals, nonces: pg.nonces, audit });
 */
export async function openInboxAudit(
  where: string,
  options: { readonly schema?: string } = {},
): Promise<InboxAuditStore> {
  if (typeof where !== 'string')
    throw new TypeError(`openInboxAudit expects sqlite:<file> or postgres://…, got ${describe(where)}`);
  if (where.startsWith('sqlite:')) {
    const file = where.slice('sqlite:'.length);
    if (file === '') throw new TypeError('openInboxAudit: sqlite: needs a file name, e.g. sqlite:approvals.db');
    return sqliteAudit(file);
  }
  if (where.startsWith('postgres://') || where.startsWith('postgresql://'))
    return postgresAudit(where, options.schema ?? 'toolgate');
  throw new TypeError(`openInboxAudit expects sqlite:<file> or postgres://…, got ${JSON.stringify(where)}`);
}
