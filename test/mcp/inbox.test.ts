/**
 * A 2026-07-28 client's ask where the gateway has an approval inbox: `input_required` with a URL-mode
 * elicitation to the request's inbox page (behind the inbox's sign-in, never a pre-authenticated link);
 * a retry before anyone answered gets the same `input_required` again and nothing runs; approved in the
 * inbox (headless Chromium), the client's retry finds the answer in the store and runs the call once; a
 * replay is a protocol error. A resource read takes the same path, its approval naming its kind.
 */
import { ProtocolError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { gatewayInbox } from '../../src/gateway/index.js';
import { createInbox, jwtApprover } from '../../src/inbox/index.js';
import { MemoryStores } from '../../src/stores/memory.js';
import { emptyFile, gatewayOverHttp, lines, modernClient, stdioUpstream, tempDir, writePolicy } from '../harness.js';
import { browserPerFile, signedIn } from '../inbox/browser-fixture.js';
import { INBOX_SECRET, JWT_SECRET } from '../inbox/fixture.js';
import { MODERN } from './fixtures/processes.js';

const { browser, cleanups } = browserPerFile();

interface UrlInputRequired {
  readonly resultType: 'input_required';
  readonly requestState: string;
  readonly inputRequests: Record<string, { method: string; params: { mode: string; url: string; message: string } }>;
}

async function start() {
  const inbox = createInbox({ secret: INBOX_SECRET, authenticate: jwtApprover({ secret: JWT_SECRET }) });
  const server = await inbox.listen();
  cleanups.push(async () => {
    inbox.close();
    await server.close();
  });
  const dir = tempDir('mrtr-inbox');
  const ledger = emptyFile(dir, 'ledger');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { modern: { ...stdioUpstream(MODERN, { LEDGER: ledger }), connectTimeoutMs: 30_000 } },
      pin: 'off',
    },
    rules: [
      { name: 'payments', tools: ['modern:pay'], result: 'ask', reason: 'a person approves payments' },
      { name: 'rest', result: 'allow' },
    ],
    resources: [
      { name: 'secrets', uri: 'docs://secret/**', result: 'ask', reason: 'a person approves reading secrets' },
      { name: 'docs', uri: 'docs://**', result: 'allow' },
    ],
  });
  const stores = new MemoryStores();
  const { http, records } = await gatewayOverHttp(cleanups, policy, {
    gateway: () => ({
      inbox: gatewayInbox(inbox, server.url),
      requestState: {
        secret: 'the owner-set approval key of the replicas',
        nonces: stores.nonces,
        ledger: stores.ledger,
      },
    }),
    http: () => ({
      audience: false,
      authenticate: async (token) => ({ token, clientId: token, scopes: ['modern:pay'] }),
    }),
  });
  const client = await modernClient(cleanups, http.url, {
    token: 'alice',
    capabilities: { elicitation: { url: {} } },
    inputRequired: { autoFulfill: false },
  });
  return { client, paid: () => lines(ledger), records, inboxUrl: server.url, store: inbox.store };
}

/** Opens the inbox page the client was sent, signed in as an approver, and approves the request there. */
async function approveInBrowser(url: string, what: RegExp): Promise<void> {
  const context = await signedIn(browser(), cleanups, 'approver@example.com');
  const page = await context.newPage();
  await page.goto(url);
  const card = page.locator('article.approval.pending');
  await card.waitFor();
  expect(await card.innerText()).toMatch(what);
  await card.getByRole('button', { name: /^Approve/ }).click();
  await page.locator('article.approval.pending').waitFor({ state: 'detached' });
}

describe('2026-07-28 asks through the approval inbox (URL-mode elicitation)', { timeout: 120_000 }, () => {
  it('a tool call: sent to the inbox page, approved in Chromium, the retry runs once; a replay is refused', async () => {
    const { client, paid, records, inboxUrl, store } = await start();
    const pay = { name: 'modern:pay', arguments: { to: 'bob', amount: 5 } };
    const asked = (await client.callTool(pay, { allowInputRequired: true })) as unknown as UrlInputRequired;
    expect(asked.resultType).toBe('input_required');
    const elicit = asked.inputRequests['toolgate.approval']!;
    expect(elicit.method).toBe('elicitation/create');
    expect(elicit.params.mode).toBe('url');
    // The inbox page of the request, not a signed link: opening it needs the inbox's sign-in.
    expect(elicit.params.url.startsWith(inboxUrl)).toBe(true);
    expect(elicit.params.url).not.toMatch(/token=/);
    expect((await store.list({ status: 'pending' })).map((r) => r.toolName)).toEqual(['modern:pay']);
    const retry = {
      ...pay,
      requestState: asked.requestState,
      inputResponses: { 'toolgate.approval': { action: 'accept' } },
    };

    // Not answered yet: input_required again, nothing runs.
    const early = (await client.callTool(retry as never, { allowInputRequired: true })) as unknown as UrlInputRequired;
    expect(early.resultType).toBe('input_required');
    expect(paid()).toEqual([]);

    await approveInBrowser(elicit.params.url, /modern:pay/);
    const ran = await client.callTool(retry as never);
    expect(ran.content).toEqual([{ type: 'text', text: 'paid 5 to bob' }]);
    expect(paid()).toEqual(['bob:5']);

    const replay = await client.callTool(retry as never).then(
      () => null,
      (e: unknown) => e,
    );
    expect(replay).toBeInstanceOf(ProtocolError);
    expect((replay as ProtocolError).message).toMatch(/used already/);
    expect(paid()).toEqual(['bob:5']);
    const states = records.flatMap((r) => (r.type === 'tool' && r.approval ? [r.approval.state] : []));
    expect(states).toEqual(['asked', 'pending', 'approved', 'denied']);
    expect(records.find((r) => r.type === 'tool' && r.approval?.state === 'approved')).toMatchObject({
      approval: { approver: 'approver@example.com' },
    });
  });

  it('a resource read takes the same path; its approval names its kind and URI', async () => {
    const { client, store } = await start();
    const uri = 'docs://secret/keys';
    const asked = (await client.readResource({ uri }, { allowInputRequired: true })) as unknown as UrlInputRequired;
    expect(asked.resultType).toBe('input_required');
    const [pending] = await store.list({ status: 'pending' });
    expect(pending).toMatchObject({ kind: 'resource', canonical: uri });
    await approveInBrowser(asked.inputRequests['toolgate.approval']!.params.url, /docs:\/\/secret\/keys/);
    const read = await client.readResource({
      uri,
      requestState: asked.requestState,
      inputResponses: { 'toolgate.approval': { action: 'accept' } },
    } as never);
    expect(read.contents[0]).toMatchObject({ uri });
  });
});
