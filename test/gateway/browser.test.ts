/**
 * A gateway ask answered in a browser: headless Debian Chromium (playwright-core) opens the link the
 * gateway gave the MCP client by URL elicitation, clicks Approve on the gateway's card, and the upstream
 * runs the call once.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createGateway, gatewayInbox } from '../../src/gateway/index.js';
import { createInbox, jwtApprover } from '../../src/inbox/index.js';
import { parsePolicy } from '../../src/policy-file/index.js';
import { browserPerFile } from '../inbox/browser-fixture.js';
import { INBOX_SECRET, JWT_SECRET, bearer } from '../inbox/fixture.js';
import { stdioUpstream, tempDir } from '../harness.js';

const BANK = join(process.cwd(), 'test/gateway/fixtures/bank-server.ts');
const { browser, cleanups } = browserPerFile();

describe('a gateway card in the inbox, in a browser', { timeout: 120_000 }, () => {
  it('the link from the URL elicitation opens the card; Approve runs the call once', async () => {
    const ledger = join(tempDir('gw-browser'), 'ledger.txt');
    const inbox = createInbox({ secret: INBOX_SECRET, authenticate: jwtApprover({ secret: JWT_SECRET }) });
    const server = await inbox.listen();
    cleanups.push(async () => {
      inbox.close();
      await server.close();
    });
    const set = parsePolicy(
      stringify({
        version: 1,
        rules: [
          { name: 'ask-payments', tools: 'bank:pay', result: 'ask', reason: 'payments need a person' },
          { name: 'bank', namespace: 'bank', result: 'allow' },
        ],
      }),
    ).policy!;
    const gateway = await createGateway({
      policy: set,
      upstreams: {
        bank: { stdio: stdioUpstream(BANK, { BANK_LEDGER: ledger }) },
      },
      inbox: gatewayInbox(inbox, server.url),
    });
    cleanups.push(() => gateway.close());
    const [a, b] = InMemoryTransport.createLinkedPair();
    await gateway.createServer().connect(b);
    const client = new Client({ name: 'agent', version: '1' }, { capabilities: { elicitation: { url: {} } } });
    const links: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      links.push((request.params as { url: string }).url);
      return { action: 'accept' };
    });
    await client.connect(a);
    cleanups.push(() => client.close());

    const call = client.callTool({ name: 'bank:pay', arguments: { to: 'ana', amount: 75 } });
    await expect.poll(() => links.length).toBe(1);
    const context = await browser().newContext({
      extraHTTPHeaders: { authorization: `Bearer ${await bearer('alice@example.com')}` },
    });
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(links[0]!);
    const card = page.locator(`article.approval.pending`);
    await card.waitFor();
    expect(await card.locator('.tool strong').innerText()).toBe('bank:pay'); // the h2 is the card's summary
    expect(await card.innerText()).toContain('payments need a person');
    expect(await card.locator('fieldset.remember').count()).toBe(0); // the gateway does not remember answers
    await card.getByRole('button', { name: 'Approve bank:pay', exact: true }).click();
    expect(((await call) as CallToolResult).content).toEqual([{ type: 'text', text: 'paid 75 to ana' }]);
    expect(existsSync(ledger) ? readFileSync(ledger, 'utf8') : '').toBe('ana:75\n');
  });
});
