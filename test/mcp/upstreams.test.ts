/**
 * The gateway's upstreams on the MCP client of src/mcp/: one gateway in front of a 2026-07-28 upstream
 * (SDK v2, stdio), a 2025-11-25 upstream (SDK v1, Streamable HTTP) and one that answers in an era it did
 * not announce, with a 2025-11-25 client downstream (the gateway's downstream is still 2025-era here).
 */
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach, gatewayOn, inMemoryClient, stdioUpstream, tempDir, text, writePolicy } from '../harness.js';
import { httpFixture, LEGACY, LIAR, MODERN } from './fixtures/processes.js';

const cleanups = cleanupsAfterEach();

async function start() {
  const legacy = await httpFixture(LEGACY);
  cleanups.push(() => legacy.stop());
  const policy = writePolicy(tempDir('upstreams'), {
    gateway: {
      upstreams: {
        modern: stdioUpstream(MODERN),
        legacy: { url: legacy.url.href },
        liar: stdioUpstream(LIAR, { LIE: 'modern' }),
      },
    },
    rules: [{ name: 'everything', result: 'allow' }],
  });
  const { gateway, records } = await gatewayOn(cleanups, policy);
  const client = await inMemoryClient(cleanups, gateway, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { ok: true } }));
  return { gateway, client, records };
}

describe('the gateway speaks each upstream its own era', { timeout: 90_000 }, () => {
  it('discovers a 2026-07-28 upstream and falls back to 2025-11-25 for the other; both serve one client', async () => {
    const { gateway, client } = await start();
    expect(gateway.upstreams.get('modern')!.session).toMatchObject({ era: 'modern', version: '2026-07-28' });
    expect(gateway.upstreams.get('legacy')!.session).toMatchObject({ era: 'legacy', version: '2025-11-25' });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['modern:echo', 'legacy:echo', 'liar:echo']));
    expect(text(await client.callTool({ name: 'modern:era', arguments: {} }))).toBe('modern');
    expect(text(await client.callTool({ name: 'legacy:era', arguments: {} }))).toBe('legacy');
    // The 2026 upstream's input_required (an elicitation) is put to the 2025 client as an elicitation/create
    // request, and its answer goes back on the retry; the 2025 upstream's request is relayed as it is.
    expect(text(await client.callTool({ name: 'modern:confirm', arguments: {} }))).toBe(
      'user said: accept {"ok":true}',
    );
    expect(text(await client.callTool({ name: 'legacy:confirm', arguments: {} }))).toBe(
      'user said: accept {"ok":true}',
    );
  });

  it('refuses an answer in the era the upstream did not announce, audits it, and probes that upstream again', async () => {
    const { gateway, client, records } = await start();
    const result = await client.callTool({ name: 'liar:echo', arguments: { text: 'x' } });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(
      /protocol error: the server announced 2026-07-28 \(modern era\) at connect, then answered tools\/call without resultType/,
    );
    await expect.poll(() => gateway.upstreams.get('liar')!.state).toBe('down');
    const down = records.find((r) => r.type === 'upstream' && r.upstream === 'liar' && r.state === 'down');
    expect(down).toMatchObject({ reason: expect.stringMatching(/answered tools\/call without resultType/) });
    // The other upstreams keep serving; the liar is reconnected (its era probed again).
    expect(text(await client.callTool({ name: 'modern:echo', arguments: { text: 'y' } }))).toBe('echo: y');
    await expect.poll(() => gateway.upstreams.get('liar')!.state, { timeout: 15_000 }).toBe('ready');
  });
});
