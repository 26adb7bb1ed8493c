// Logging towards a 2026-07-28 upstream (MCP-2026 item 11; `server/utilities/logging.mdx`): that revision has
// no `logging/setLevel`, the level travels per request in `_meta` (`io.modelcontextprotocol/logLevel`) and an
// upstream logs only for a request that carried one. The gateway's requests on behalf of a 2025-11-25 client
// that set a level carry it (tools/call, resources/read, prompts/get; the SDK path and the raw one), and the
// lines come back to that client at that level; a 2026-07-28 client's own level is passed on as it came; a
// request with no level carries none and gets no line, even from an upstream that logs anyway. A real
// 2026-07-28 upstream over Streamable HTTP (fixtures/modern-logger.ts), both ways of the fast path.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { httpFixture, ROOT } from '../mcp/fixtures/processes.js';
import {
  cleanupsAfterEach,
  fastPathFor,
  gatewayOverHttp,
  inMemoryClient,
  modernClient,
  modernExchange,
  tempDir,
  text,
  until,
  untilListed,
  writePolicy,
  heardLines,
} from '../harness.js';

const cleanups = cleanupsAfterEach();
const LEVEL = 'io.modelcontextprotocol/logLevel';
const LOGGER = `${ROOT}/test/gateway/fixtures/modern-logger.ts`;

async function gateway(fast: boolean) {
  fastPathFor(cleanups, fast);
  const upstream = await httpFixture(LOGGER);
  cleanups.push(() => upstream.stop());
  const policy = writePolicy(tempDir('modern-log-level'), {
    gateway: { upstreams: { logs: { url: upstream.url.href, connectTimeoutMs: 30_000 } }, pin: 'off' },
    rules: [{ name: 'rest', result: 'allow' }],
    resources: [{ name: 'all', result: 'allow' }],
    prompts: [{ name: 'all', result: 'allow' }],
  });
  const on = await gatewayOverHttp(cleanups, policy);
  return on;
}

/** A 2025-11-25 client of the gateway (SDK v1) and the log lines it heard. */
async function legacyClient(on: Awaited<ReturnType<typeof gateway>>): Promise<{ client: Client; heard: string[] }> {
  const client = await inMemoryClient(cleanups, on.gateway);
  const heard = heardLines(client);
  await untilListed(client, 'logs:note');
  return { client, heard };
}

const note = (client: Client, tag: string, args: Record<string, unknown> = {}) =>
  client.callTool({ name: 'logs:note', arguments: { tag, ...args } }).then(text);

describe('log levels towards a 2026-07-28 upstream', { timeout: 120_000 }, () => {
  for (const fast of [true, false])
    it(`a 2025-11-25 client's level (logging/setLevel) is carried per request, its lines reach it at that level (fast path ${fast ? 'on' : 'off'})`, async () => {
      const on = await gateway(fast);
      const { client, heard } = await legacyClient(on);
      // No level set: none sent, and no line — even from an upstream that logs anyway.
      expect(await note(client, 'quiet')).toBe('level: none');
      expect(await note(client, 'loud', { obey: false })).toBe('level: none');
      expect(heard).toEqual([]);
      await client.setLoggingLevel('warning');
      expect(await note(client, 'a')).toBe('level: warning');
      expect(heard).toEqual(['a warning', 'a error']);
      // An upstream that logs below the level: the gateway holds the client to the level it set.
      heard.length = 0;
      expect(await note(client, 'b', { obey: false })).toBe('level: warning');
      expect(heard).toEqual(['b warning', 'b error']);
      // A read and a prompt carry it too.
      heard.length = 0;
      await client.setLoggingLevel('debug');
      const read = await client.readResource({ uri: 'logs://note' });
      expect(read.contents[0]).toMatchObject({ text: 'level: debug' });
      const prompt = await client.getPrompt({ name: 'logs:noted' });
      expect(prompt.messages[0]!.content).toMatchObject({ text: 'level: debug' });
      expect(heard).toEqual(['read', 'prompt']);
    });

  it("a 2025-11-25 client over Streamable HTTP (the gateway's fast path downstream): its level carried, its lines heard", async () => {
    const on = await gateway(true);
    await untilListed(await legacyClient(on).then((c) => c.client), 'logs:note');
    const client = new Client({ name: 'legacy-http', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(on.url));
    cleanups.push(() => client.close());
    const heard = heardLines(client);
    expect(await note(client, 'quiet', { obey: false })).toBe('level: none');
    await client.setLoggingLevel('error');
    expect(await note(client, 'h', { obey: false })).toBe('level: error');
    await until('the line over the session stream', () => heard.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heard).toEqual(['h error']);
  });

  it("a 2025-11-25 client's lines reach no other client", async () => {
    const on = await gateway(true);
    const alice = await legacyClient(on);
    const bob = await legacyClient(on);
    await alice.client.setLoggingLevel('info');
    expect(await note(alice.client, 'alice')).toBe('level: info');
    expect(await note(bob.client, 'bob', { obey: false })).toBe('level: none');
    // Both in flight at once: whose a line is cannot be told apart on the gateway's side, so bob never hears
    // alice's lines (and a line is dropped rather than guessed).
    const both = await Promise.all([
      note(alice.client, 'alice-again', { waitMs: 300 }),
      note(bob.client, 'bob-again', { obey: false, waitMs: 300 }),
    ]);
    expect(both).toEqual(['level: info', 'level: none']);
    expect(bob.heard).toEqual([]);
    expect(alice.heard.slice(0, 3)).toEqual(['alice info', 'alice warning', 'alice error']);
    for (const line of alice.heard.slice(3)) expect(line).toMatch(/^alice-again /);
  });

  for (const fast of [true, false])
    it(`a 2026-07-28 client's own level is passed on as it came, and none when it sent none (fast path ${fast ? 'on' : 'off'})`, async () => {
      const on = await gateway(fast);
      await untilListed(await legacyClient(on).then((c) => c.client), 'logs:note');
      const call = (logLevel?: string, args: Record<string, unknown> = {}) =>
        modernExchange(
          on.url,
          'tools/call',
          { name: 'logs:note', arguments: { tag: 'm', ...args } },
          logLevel === undefined ? {} : { logLevel },
        );
      const leveled = await call('warning');
      expect(leveled.answer?.result).toMatchObject({ content: [{ text: 'level: warning' }] });
      expect(leveled.logs).toEqual(['m warning', 'm error']);
      const plain = await call();
      expect(plain.answer?.result).toMatchObject({ content: [{ text: 'level: none' }] });
      expect(plain.logs).toEqual([]);
      const loud = await call(undefined, { obey: false });
      expect(loud.logs).toEqual([]);
      // An SDK v2 client pinned to 2026-07-28, its level in the request's own `_meta`.
      const modern = await modernClient(cleanups, on.url);
      const heard: string[] = [];
      modern.setNotificationHandler('notifications/message', (n) => void heard.push(String(n.params.data)));
      const read = await modern.readResource({ uri: 'logs://note', _meta: { [LEVEL]: 'info' } });
      expect(read.contents[0]).toMatchObject({ text: 'level: info' });
      expect(await modern.readResource({ uri: 'logs://note' })).toMatchObject({ contents: [{ text: 'level: none' }] });
      expect(heard).toEqual(['read']);
    });
});
