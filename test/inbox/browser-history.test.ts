/**
 * The "Answered" view (issue 27, expectation 5) from the audit log in SQLite, across a restart of the real
 * `toolgate serve` process: who answered, when, the reason, what the gate did after, refused attempts,
 * paging past the last 20, and a link to the run's other approvals. Takes the docs' history screenshot.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createInbox, openInboxAudit } from '../../src/inbox/index.js';
import { SqliteStores } from '../../src/stores/sqlite.js';
import { browserPerFile, counted, open, see, signedIn } from './browser-fixture.js';
import { INBOX_SECRET, JWT_SECRET, answer, approvalRequest, csrfOf, shop } from './fixture.js';

const { browser: browserOf, cleanups } = browserPerFile();

/** `toolgate serve` as a process of its own; resolves with its address once it listens. */
async function serve(db: string): Promise<{ url: string; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'serve',
      '--port',
      '0',
      '--store',
      `sqlite:${db}`,
      '--jwt-secret-env',
      'JWT',
    ],
    {
      env: { ...process.env, TOOLGATE_INBOX_SECRET: INBOX_SECRET, JWT: JWT_SECRET },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout!.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
      const m = /toolgate inbox on (\S+?)\/?\n/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`toolgate serve exited with ${code}: ${err}`)));
  });
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  cleanups.push(stop);
  return { url, stop };
}

describe('the Answered view', () => {
  it('shows answers with their time, approver, reason and outcome, refused attempts, 20 a page — after a restart of toolgate serve', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-history-'));
    const db = join(dir, 'approvals.db');
    // The worker: its runs wait in the store, and it writes what the gate did after to the same audit log.
    const stores = new SqliteStores({ filename: db });
    const audit = await openInboxAudit(`sqlite:${db}`);
    const worker = createInbox({
      secret: INBOX_SECRET,
      store: stores.approvals,
      nonces: stores.nonces,
      audit,
      sweepIntervalMs: 100,
    });
    cleanups.push(async () => {
      worker.close();
      await audit.close();
      stores.close();
    });
    const first = await serve(db);
    const s = shop();
    const tracked = await worker.runner(s.runner).track(await s.run({ order: 'A-1042', amount: 250 }, 'cy', 'run-7'));

    const context = await signedIn(browserOf(), cleanups, 'ana@acme.example');
    const page = await open(context, first.url);
    const card = page.locator('article.approval.pending');
    await card.getByLabel(/Reason/).fill('customer called twice');
    await card.getByRole('button', { name: 'Approve refund' }).click();
    await see(page.getByRole('status')).toContain('Approved');
    expect((await tracked.done).status).toBe('completed');
    const [record] = await stores.approvals.list();
    // A second approver, too late: a refused attempt.
    expect((await answer(first.url, record!.id, 'bo@acme.example', { effect: 'deny' })).status).toBe(409);

    // 24 more answers, so the history has a second page.
    const waits = Array.from({ length: 24 }, (_, i) =>
      worker.ask('gateway')(
        approvalRequest({
          id: `gw-${i}`,
          tool: 'refund',
          tenant: 'acme',
          rule: 'ask_refunds',
          parameters: { order: `B-${i}`, amount: 100 + i },
        }),
      ),
    );
    await expect.poll(async () => (await stores.approvals.list({ status: 'pending' })).length).toBe(24);
    const csrf = await csrfOf(first.url, 'bo@acme.example');
    for (let i = 0; i < 24; i++)
      expect((await answer(first.url, `gw-${i}`, 'bo@acme.example', { effect: 'allow' }, csrf)).status).toBe(200);
    await Promise.all(waits);
    await expect.poll(async () => (await audit.read({ limit: 100 })).length).toBe(27);

    // toolgate serve restarts: the history is read back from the audit log, not from its memory.
    await first.stop();
    const second = await serve(db);
    const history = await context.newPage();
    await history.goto(`${second.url}/history`);
    const rows = history.locator('table.history tbody tr');
    await counted(rows).toBe(20);
    await see(rows.first()).toContain('Approved by bo@acme.example');
    await see(rows.first()).toContain('B-23');
    await history.getByRole('link', { name: 'Older answers' }).click();
    await counted(rows).toBe(7);
    const older = await rows.allInnerTexts();
    const answered = older.find((t) => t.includes('Approved by ana@acme.example'))!;
    expect(answered).toContain('customer called twice');
    expect(answered).toContain('refund');
    expect(answered).toMatch(/\d{1,2}:\d{2}/);
    expect(older.some((t) => /Refused attempt by bo@acme\.example .*already answered/.test(t))).toBe(true);
    expect(older.some((t) => t.includes('The gate ran it'))).toBe(true);
    const approvedRow = history.locator('tr', { hasText: 'Approved by ana@acme.example' });
    const at = Date.parse((await approvedRow.locator('time').getAttribute('datetime'))!);
    const stored = await stores.approvals.get(record!.id);
    expect(Math.abs(at - stored!.answeredAt!)).toBeLessThan(5000);
    await history.screenshot({ path: 'docs/inbox-history.png', fullPage: true });
    // The run's other approvals, from the history row.
    await approvedRow.getByRole('link', { name: 'run-7' }).click();
    await see(history.locator('article.approval.answered')).toContain('Approved by ana@acme.example');
  });
});
