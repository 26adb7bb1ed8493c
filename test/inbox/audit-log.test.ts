/**
 * The inbox's audit log in SQLite and PostgreSQL (openInboxAudit): written in order, read back newest first,
 * paged by sequence, the same from a second connection (another replica, a restarted process).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openInboxAudit, type InboxAuditRecord } from '../../src/inbox/index.js';
import { PG_URL, uniqueName } from '../stores/servers.js';
import { cleanupsAfterEach } from '../harness.js';

const cleanups = cleanupsAfterEach({ strict: true });

const record = (i: number): InboxAuditRecord => ({
  type: i % 3 === 0 ? 'approval_answer_refused' : 'approval_answered',
  at: 1_700_000_000_000 + i,
  approvalId: `a-${i}`,
  approver: 'ana@acme.example',
  via: 'session',
  tool: 'refund',
  tenant: 'acme',
  caller: 'cy',
  runId: null,
  effect: 'allow',
  remember: 'once',
  edited: false,
  reason: null,
  summary: `Refund ${i}`,
});

describe.each([
  ['SQLite', () => `sqlite:${join(mkdtempSync(join(tmpdir(), 'toolgate-audit-')), 'a.db')}`],
  ['PostgreSQL', () => PG_URL],
])('openInboxAudit on %s', (name, where) => {
  it('reads back newest first, pages by sequence, and a second connection reads the same', async () => {
    const at = where();
    const schema = uniqueName('inbox_audit');
    const one = await openInboxAudit(at, { schema });
    cleanups.push(() => one.close());
    if (name === 'PostgreSQL')
      cleanups.push(async () => {
        const client = new pg.Client({ connectionString: PG_URL });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await client.end();
      });
    for (let i = 0; i < 25; i++) await one.write(record(i));
    const page = await one.read({ limit: 20 });
    expect(page.map((e) => e.approvalId)).toEqual(Array.from({ length: 20 }, (_, i) => `a-${24 - i}`));
    const rest = await one.read({ before: page.at(-1)!.seq, limit: 20 });
    expect(rest.map((e) => e.approvalId)).toEqual(['a-4', 'a-3', 'a-2', 'a-1', 'a-0']);
    expect(rest.at(-1)).toMatchObject(record(0));
    const two = await openInboxAudit(at, { schema });
    cleanups.push(() => two.close());
    expect((await two.read({ limit: 100 })).length).toBe(25);
    await expect(one.read({ limit: 0 })).rejects.toThrow(/limit/);
    await expect(one.read({ before: 'x', limit: 5 })).rejects.toThrow(/before/);
  });
});

describe('openInboxAudit', () => {
  it('names what it expects', async () => {
    await expect(openInboxAudit('memory')).rejects.toThrow(/sqlite:<file> or postgres/);
    await expect(openInboxAudit('sqlite:')).rejects.toThrow(/needs a file name/);
  });
});
