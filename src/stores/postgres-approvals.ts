/**
 * The PostgreSQL approval store (`toolgate/postgres`): pending approvals in one table, a live inbox by
 * LISTEN/NOTIFY on `<schema>_approvals`. Internal: `PostgresStores.approvals` is what is published.
 */
import type pg from 'pg';
import { NOW } from './postgres-sql.js';
import { checkAnswer, checkPending, pendingOf } from './shared.js';
import type { Answer, ApprovalStore, PendingFilter, PendingRecord } from './types.js';

type Row = Record<string, unknown>;

/** The approvals of schema `s` (quoted; `schema` as given), queried by `q`, listened for on a client of `pool`. */
export function approvalsIn(
  q: (text: string, values?: unknown[]) => Promise<pg.QueryResult<Row>>,
  s: string,
  schema: string,
  pool: pg.Pool,
): ApprovalStore {
  const channel = `${schema}_approvals`;
  const listeners = new Set<(id: string) => void>();
  let listening: Promise<pg.PoolClient> | null = null;
  const tell = (id: string): void => {
    for (const listener of listeners) {
      try {
        listener(id);
      } catch {
        // A listener's failure is its own.
      }
    }
  };
  const notify = (id: string): Promise<unknown> => q(`SELECT pg_notify($1, $2)`, [channel, id]);
  return {
    async put(pending: PendingRecord): Promise<void> {
      checkPending(pending);
      const { status, answer, answeredAt, createdAt, expiresAt, ...rest } = pending;
      const r = await q(
        `INSERT INTO ${s}.approvals (id, tenant, status, source, created_at, expires_at, record, answer, answered_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
        [
          pending.id,
          pending.tenant,
          status,
          pending.source,
          createdAt,
          expiresAt,
          JSON.stringify(rest),
          answer ? JSON.stringify(answer) : null,
          answeredAt,
        ],
      );
      if (r.rowCount === 1) await notify(pending.id);
    },
    async get(id: string): Promise<PendingRecord | undefined> {
      const r = await q(`SELECT *, ${NOW} AS now FROM ${s}.approvals WHERE id = $1`, [id]);
      const row = r.rows[0];
      return row ? pendingOf(row, Number(row['now'])) : undefined;
    },
    async list(filter: PendingFilter = {}): Promise<PendingRecord[]> {
      const values: unknown[] = [];
      const where: string[] = [];
      if (filter.tenant !== undefined) {
        values.push(filter.tenant);
        where.push(`tenant = $${values.length}`);
      }
      if (filter.status === 'pending') where.push(`status = 'pending' AND expires_at >= ${NOW}`);
      else if (filter.status === 'expired') where.push(`status = 'pending' AND expires_at < ${NOW}`);
      else if (filter.status === 'answered') where.push(`status = 'answered'`);
      const r = await q(
        `SELECT *, ${NOW} AS now FROM ${s}.approvals${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at, id`,
        values,
      );
      const out: PendingRecord[] = [];
      for (const row of r.rows) {
        const record = pendingOf(row, Number(row['now']));
        if (record) out.push(record);
      }
      return out;
    },
    async answer(id: string, answer: Answer): Promise<boolean> {
      checkAnswer(answer);
      const r = await q(
        `UPDATE ${s}.approvals SET status = 'answered', answer = $2, answered_at = ${NOW}
         WHERE id = $1 AND status = 'pending' AND expires_at >= ${NOW}`,
        [id, JSON.stringify(answer)],
      );
      if (r.rowCount !== 1) return false;
      await notify(id);
      return true;
    },
    watch(listener: (id: string) => void): () => void {
      listeners.add(listener);
      listening ??= (async () => {
        const client = await pool.connect();
        client.on('notification', (message) => {
          if (message.channel === channel && message.payload) tell(message.payload);
        });
        client.on('error', () => undefined);
        await client.query(`LISTEN "${channel}"`);
        return client;
      })();
      listening.catch((error: unknown) => {
        process.emitWarning(
          `toolgate: cannot LISTEN for approvals: ${error instanceof Error ? error.message : String(error)}`,
          {
            code: 'TOOLGATE_STORE',
          },
        );
      });
      return () => {
        listeners.delete(listener);
        if (listeners.size > 0 || !listening) return;
        const done = listening;
        listening = null;
        void done.then(
          async (client) => {
            await client.query(`UNLISTEN "${channel}"`).catch(() => undefined);
            client.release();
          },
          () => undefined,
        );
      };
    },
  };
}
