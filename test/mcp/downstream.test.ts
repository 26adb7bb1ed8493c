/**
 * The gateway's downstream in both eras on one HTTP listener: a 2026-07-28 client (SDK v2, pinned) and a
 * 2025-11-25 client (SDK v1) in front of a 2026-07-28 upstream and a 2025-11-25 upstream, with the same
 * decisions; what the revision asks of the wire (headers that agree with the body, -32022, private lists).
 */
import { readFileSync } from 'node:fs';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import {
  cleanupsAfterEach,
  emptyFile,
  gatewayOverHttp,
  modernClient,
  modernMeta,
  postMcp,
  stdioUpstream,
  tempDir,
  text,
  writePolicy,
} from '../harness.js';
import { httpFixture, LEGACY, MODERN } from './fixtures/processes.js';

const cleanups = cleanupsAfterEach();

async function start() {
  const dir = tempDir('downstream');
  const ledger = emptyFile(dir, 'ledger');
  const legacy = await httpFixture(LEGACY, { LEDGER: ledger, SCHEME: 'old' });
  cleanups.push(() => legacy.stop());
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: {
        modern: { ...stdioUpstream(MODERN, { LEDGER: ledger }), connectTimeoutMs: 30_000 },
        legacy: { url: legacy.url.href, connectTimeoutMs: 30_000 },
      },
    },
    rules: [
      { name: 'small', tools: ['modern:pay', 'legacy:pay'], when: { amount: { lte: 10 } }, result: 'allow' },
      { name: 'no-big', tools: ['modern:pay', 'legacy:pay'], result: 'deny', reason: 'over 10' },
      { name: 'rest', result: 'allow' },
    ],
    resources: [
      { name: 'no-secrets', uri: 'docs://secret/**', result: 'deny', reason: 'secrets stay upstream' },
      { name: 'old-secrets', uri: 'old://secret/**', result: 'deny', reason: 'secrets stay upstream' },
      { name: 'docs', uri: ['docs://**', 'old://**'], result: 'allow' },
    ],
    prompts: [{ name: 'summaries', prompts: '**', result: 'allow' }],
  });
  const { gateway, url, records } = await gatewayOverHttp(cleanups, policy);
  return { gateway, url, ledger, records };
}

async function legacyClient(url: URL): Promise<ClientV1> {
  const client = new ClientV1({ name: 'legacy-client', version: '1.0.0' });
  await client.connect(new HttpV1(url));
  cleanups.push(() => client.close());
  return client;
}

/** A hand-made 2026-07-28 POST (what no SDK client would send: mismatched headers, unknown versions). */
const post = (url: URL, body: Record<string, unknown>, headers: Record<string, string>) =>
  postMcp<{ error?: { code: number; message: string } }>(url, { id: 7, ...body }, headers);

describe('one listener, both eras', { timeout: 120_000 }, () => {
  it('a 2026-07-28 client and a 2025-11-25 client list, call, read and get with the same decisions', async () => {
    const { url, ledger } = await start();
    const modern = await modernClient(cleanups, url);
    const legacy = await legacyClient(url);
    expect(modern.getProtocolEra()).toBe('modern');
    expect(modern.getDiscoverResult()?.capabilities).toMatchObject({ tools: {}, resources: {}, prompts: {} });
    const names = (c: { listTools(): Promise<{ tools: { name: string }[] }> }) =>
      c.listTools().then((r) => r.tools.map((t) => t.name).sort());
    expect(await names(modern)).toEqual(await names(legacy));
    expect(await names(modern)).toContain('modern:pay');
    for (const client of [modern, legacy] as const) {
      for (const upstream of ['modern', 'legacy']) {
        expect(text(await client.callTool({ name: `${upstream}:era`, arguments: {} }))).toBe(upstream);
        const small = await client.callTool({ name: `${upstream}:pay`, arguments: { to: 'bob', amount: 5 } });
        expect(small.isError).toBeFalsy();
        const big = await client.callTool({ name: `${upstream}:pay`, arguments: { to: 'eve', amount: 500 } });
        expect(big.isError).toBe(true);
        expect(text(big)).toMatch(/over 10/);
      }
      for (const scheme of ['docs', 'old']) {
        const read = await client.readResource({ uri: `${scheme}://public/readme` });
        expect((read.contents[0] as { text: string }).text).toBe('public readme');
        await expect(client.readResource({ uri: `${scheme}://secret/keys` })).rejects.toThrow(/secrets stay upstream/);
      }
      const prompt = await client.getPrompt({ name: 'modern:summarise', arguments: { topic: 'eras' } });
      expect(prompt.messages[0]!.content).toMatchObject({ text: 'Summarise eras' });
    }
    // Four small payments ran (two clients × two upstreams); no big one did.
    expect(readFileSync(ledger, 'utf8').trim().split('\n').sort()).toEqual(['bob:5', 'bob:5', 'bob:5', 'bob:5']);
  });

  it('every per-caller list and read is private with a short ttl for a 2026-07-28 client', async () => {
    const { url } = await start();
    const modern = await modernClient(cleanups, url);
    for (const result of [await modern.listTools(), await modern.listResources(), await modern.listPrompts()])
      expect(result).toMatchObject({ cacheScope: 'private', ttlMs: 5000 });
    // A read is private whatever the upstream said, and fresh no longer than it said (its ttlMs is 0).
    expect(await modern.readResource({ uri: 'docs://public/readme' })).toMatchObject({
      cacheScope: 'private',
      ttlMs: 0,
    });
    expect(modern.getDiscoverResult()).toMatchObject({ cacheScope: 'private' });
  });

  it('refuses headers that disagree with the body before anything is decided, and unknown versions with -32022', async () => {
    const { url, ledger, records } = await start();
    const pay = {
      method: 'tools/call',
      params: { name: 'modern:pay', arguments: { to: 'bob', amount: 1 }, _meta: modernMeta() },
    };
    const base = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' };
    const mismatched = await post(url, pay, { ...base, 'mcp-name': 'modern:echo' });
    expect(mismatched.status).toBe(400);
    expect(mismatched.body.error?.code).toBe(-32020);
    const wrongMethod = await post(url, pay, { ...base, 'mcp-method': 'tools/list', 'mcp-name': 'modern:pay' });
    expect(wrongMethod.body.error?.code).toBe(-32020);
    const unknown = await post(
      url,
      { method: 'tools/list', params: { _meta: modernMeta({}, '2099-01-01') } },
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
    );
    expect(unknown.status).toBe(400);
    expect(unknown.body.error?.code).toBe(-32022);
    expect(JSON.stringify(unknown.body.error)).toContain('2026-07-28');
    // Nothing ran and nothing was decided; each refusal is audited, naming what was wrong.
    expect(readFileSync(ledger, 'utf8')).toBe('');
    expect(records.filter((r) => r.type === 'tool')).toEqual([]);
    expect(records.filter((r) => r.type === 'protocol').map((r) => (r as { reason: string }).reason)).toEqual([
      expect.stringMatching(/Mcp-Name header names "modern:echo"/),
      expect.stringMatching(/Mcp-Method header names tools\/list/),
      expect.stringMatching(/Unsupported protocol version: 2099-01-01/),
    ]);
    // The same request with agreeing headers runs.
    const ok = await post(url, pay, { ...base, 'mcp-name': 'modern:pay' });
    expect(ok.status).toBe(200);
    expect(readFileSync(ledger, 'utf8')).toBe('bob:1\n');
  });
});
