/**
 * The guarded reload (issue 26): a running gateway diffs every reload against the policy in force. A reload
 * that widens access is held — the old policy stays in force — and waits in the inbox as a card showing the
 * diff with its example call; approved there in Chromium it takes effect, audited with who approved. A
 * narrowing reload is in force at once; a denied one is not, and the audit says why.
 */
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createGateway, gatewayInbox, type GatewayAuditRecord } from '../../src/gateway/index.js';
import { createInbox, jwtApprover } from '../../src/inbox/index.js';
import { parsePolicy, type PolicySet } from '../../src/policy-file/index.js';
import { browserPerFile } from '../inbox/browser-fixture.js';
import { INBOX_SECRET, JWT_SECRET, bearer } from '../inbox/fixture.js';
import { inMemoryClient, stdioUpstream, tempDir } from '../harness.js';

const BANK = join(process.cwd(), 'test/gateway/fixtures/bank-server.ts');
const { browser, cleanups } = browserPerFile();

/** Payments allowed or denied; `bank: false` drops the rule allowing the rest of the bank (the fallback denies). */
function policy(payments: 'allow' | 'deny', bank = true): PolicySet {
  return parsePolicy(
    stringify({
      version: 1,
      rules: [
        { name: 'payments', tools: 'bank:pay', result: payments, reason: 'payments are off' },
        ...(bank ? [{ name: 'bank', namespace: 'bank', result: 'allow' }] : []),
      ],
    }),
  ).policy!;
}

async function start(widen?: 'hold' | 'allow') {
  const ledger = join(tempDir('diff-reload'), 'ledger.txt');
  const inbox = createInbox({ secret: INBOX_SECRET, authenticate: jwtApprover({ secret: JWT_SECRET }) });
  const server = await inbox.listen();
  cleanups.push(async () => {
    inbox.close();
    await server.close();
  });
  const audit: GatewayAuditRecord[] = [];
  const gateway = await createGateway({
    policy: policy('deny'),
    upstreams: {
      bank: { stdio: stdioUpstream(BANK, { BANK_LEDGER: ledger }) },
    },
    inbox: gatewayInbox(inbox, server.url),
    audit: (r) => audit.push(r),
    ...(widen ? { reloadGuard: { widen } } : {}),
  });
  cleanups.push(() => gateway.close());
  const client = await inMemoryClient(cleanups, gateway);
  const pay = async (): Promise<CallToolResult> =>
    (await client.callTool({ name: 'bank:pay', arguments: { to: 'ana', amount: 75 } })) as CallToolResult;
  const balance = async (): Promise<CallToolResult> =>
    (await client.callTool({ name: 'bank:balance', arguments: {} })) as CallToolResult;
  const modes = (event: string) =>
    audit.filter((r) => r.type === 'mode' && r.event === event) as unknown as Record<string, unknown>[];
  return { inbox, server, gateway, pay, balance, modes };
}

describe('guarded reload', { timeout: 120_000 }, () => {
  it('a widening reload is held, shown in the inbox with its diff, and takes effect when approved in Chromium', async () => {
    const { server, gateway, pay, modes } = await start();
    const denied = policy('deny');
    expect((await pay()).isError).toBe(true);
    const result = await gateway.reload(policy('allow'));
    expect(result).toMatchObject({ ok: false, held: true });
    if (result.ok || !result.held) throw new Error('not held');
    // Held: the old policy stays in force.
    expect(gateway.policy.version).toBe(denied.version);
    expect((await pay()).isError).toBe(true);
    expect(modes('held')[0]).toMatchObject({ approval: result.approval });
    expect(String((modes('held')[0]!['changes'] as string[])[0])).toContain('allowed bank:pay {}');

    const context = await browser().newContext({
      extraHTTPHeaders: { authorization: `Bearer ${await bearer('alice@example.com')}` },
    });
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(server.url);
    const card = page.locator('article.approval.pending');
    await card.waitFor();
    const shown = await card.innerText();
    expect(shown).toContain('policy reload');
    expect(shown).toContain('bank:pay'); // the example call of the region newly allowed
    // Readable: the diff shown open, as text — the region, its example call and each side's verdict — and
    // the changes one line each, not JSON objects.
    const diffShown = await card.getByLabel('the policy diff').innerText();
    expect(diffShown).toMatch(/\+ newly allowed .*\n\s+where .*\n\s+example\s+bank:pay \{\}/);
    expect(diffShown).toContain('old      deny by rule "payments"');
    expect(diffShown).toContain('new      allow by rule "payments"');
    expect(shown).toContain('newly allowed: bank:pay {} — was deny by rule');
    expect(shown).not.toContain('"direction"');
    expect(shown).toContain('widens access');
    await card.getByRole('button', { name: /^Approve / }).click();

    const settled = await result.settled;
    expect(settled).toMatchObject({ ok: true });
    expect(gateway.policy.version).toBe(policy('allow').version);
    expect((await pay()).content).toEqual([{ type: 'text', text: 'paid 75 to ana' }]);
    const approved = modes('reload').at(-1)!;
    expect(approved['approver']).toBe('alice@example.com');
    expect((approved['changes'] as string[]).join('\n')).toContain('approved by alice@example.com');
  });

  it('a narrowing reload is in force at once; a denied widening keeps the policy and the audit says why', async () => {
    const { inbox, gateway, pay, balance, modes } = await start();
    expect((await balance()).isError).toBeFalsy();
    // The kill switch: the rest of the bank denied too. It narrows, and is in force at once, nobody asked.
    const narrowing = await gateway.reload(policy('deny', false));
    expect(narrowing).toMatchObject({ ok: true });
    expect(gateway.policy.version).toBe(policy('deny', false).version);
    expect((await balance()).isError).toBe(true);
    expect(modes('held')).toEqual([]);
    // Widening again: held; denied in the inbox (through its store, as a second approver would).
    const held = await gateway.reload(policy('allow'));
    if (held.ok || !held.held) throw new Error('not held');
    const pending = await inbox.store.get(held.approval);
    expect(pending?.kind).toBe('reload');
    await inbox.store.answer(held.approval, { effect: 'deny', reason: 'not this week', approver: 'bob@example.com' });
    const settled = await held.settled;
    expect(settled).toMatchObject({ ok: false });
    expect(gateway.policy.version).toBe(policy('deny', false).version);
    expect((await pay()).isError).toBe(true);
    expect(String(modes('refused').at(-1)!['error'])).toContain('denied by bob@example.com: not this week');
  });

  it('--reload widen=allow lets a widening reload take effect, its record saying what widened', async () => {
    const { gateway, pay, modes } = await start('allow');
    const result = await gateway.reload(policy('allow'));
    expect(result).toMatchObject({ ok: true });
    expect((await pay()).content).toEqual([{ type: 'text', text: 'paid 75 to ana' }]);
    expect((modes('reload').at(-1)!['changes'] as string[]).join('\n')).toContain('widens access and was not held');
  });
});
