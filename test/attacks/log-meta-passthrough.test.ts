// Attack on the log-level route (e9c0944, 87430e6): "no level, none sent". The level a 2026-07-28 upstream is
// sent is meant to be the gateway's (Relay.scopeOf: the 2025-11-25 client's logging/setLevel, or a 2026-07-28
// request's own level once checked by logLevelOf). But resources/read and prompts/get forward the client's
// params with their `_meta` (session.ts: `{ ...params, uri }`, `{ ...params, name, arguments }`), and
// GatewayClient's `#leveled` only adds the key when the scope has a level: a 2025-11-25 client that never set
// a level puts `io.modelcontextprotocol/logLevel` — any value, a bogus string, an object — in its request's
// `_meta` and the upstream is sent it. A real 2026-07-28 upstream over HTTP (test/gateway/fixtures/
// modern-logger.ts, which answers the level its request carried), a 2025-11-25 client in memory.
// Wider than the level: the read's `_meta` keys win over the gateway's own 2026-07-28 envelope (the SDK
// Client's `_envelopeOutbound`, upstream-raw-modern.ts's `envelope`: "the request's own `_meta` keys after
// (they win)"), so the client names itself to the upstream (clientInfo) and declares capabilities the gateway
// does not (clientCapabilities: the tasks extension). fixtures/modern-late-logger.ts's `late://envelope`
// answers the envelope it was sent.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { httpFixture } from '../mcp/fixtures/processes.js';
import {
  cleanupsAfterEach,
  fastPathFor,
  gatewayOverHttp,
  inMemoryClient,
  ROOT,
  tempDir,
  untilListed,
  writePolicy,
} from '../harness.js';

const cleanups = cleanupsAfterEach();
const LEVEL = 'io.modelcontextprotocol/logLevel';
const LOGGER = `${ROOT}/test/gateway/fixtures/modern-logger.ts`;
const ENVELOPE = `${ROOT}/test/attacks/fixtures/modern-late-logger.ts`;

async function legacy(fast: boolean, fixture = LOGGER): Promise<Client> {
  fastPathFor(cleanups, fast);
  const upstream = await httpFixture(fixture);
  cleanups.push(() => upstream.stop());
  const policy = writePolicy(tempDir('log-meta'), {
    gateway: { upstreams: { logs: { url: upstream.url.href, connectTimeoutMs: 30_000 } }, pin: 'off' },
    rules: [{ name: 'rest', result: 'allow' }],
    resources: [{ name: 'all', result: 'allow' }],
    prompts: [{ name: 'all', result: 'allow' }],
  });
  const on = await gatewayOverHttp(cleanups, policy);
  const client = await inMemoryClient(cleanups, on.gateway);
  await untilListed(client, fixture === LOGGER ? 'logs:note' : 'logs:hold');
  return client;
}

/** What the upstream says it was sent (`level: <carried>`), or the error the gateway answered. */
const carried = (answer: Promise<{ contents?: unknown[]; messages?: unknown[] }>) =>
  answer.then(
    (r) => JSON.stringify((r.contents?.[0] as { text?: string }) ?? (r.messages?.[0] as { content?: unknown })),
    (e: unknown) => `refused: ${String(e)}`,
  );

describe("a client's own _meta puts no log level upstream the gateway did not choose", { timeout: 120_000 }, () => {
  for (const fast of [true, false])
    it(`a 2025-11-25 client with no level set: none sent, whatever its read or prompt carries (fast path ${fast ? 'on' : 'off'})`, async () => {
      const client = await legacy(fast);
      const seen: string[] = [];
      for (const value of ['debug', 'verbose', { level: 'debug' }]) {
        seen.push(await carried(client.readResource({ uri: 'logs://note', _meta: { [LEVEL]: value } } as never)));
        seen.push(await carried(client.getPrompt({ name: 'logs:noted', _meta: { [LEVEL]: value } } as never)));
      }
      expect(seen.map((s) => /level: [^"]*|refused.*/.exec(s)?.[0])).toEqual(Array(6).fill('level: none'));
    });

  for (const fast of [true, false])
    it(`a 2025-11-25 client's read names no clientInfo and declares no capability to the upstream in the gateway's stead (fast path ${fast ? 'on' : 'off'})`, async () => {
      const client = await legacy(fast, ENVELOPE);
      const honest = JSON.parse(
        ((await client.readResource({ uri: 'late://envelope' })).contents[0] as { text: string }).text,
      ) as Record<string, unknown>;
      const spoofed = JSON.parse(
        (
          (
            await client.readResource({
              uri: 'late://envelope',
              _meta: {
                'io.modelcontextprotocol/clientInfo': { name: 'spoof', version: '9' },
                'io.modelcontextprotocol/clientCapabilities': {
                  extensions: { 'io.modelcontextprotocol/tasks': {} },
                },
              },
            } as never)
          ).contents[0] as { text: string }
        ).text,
      ) as Record<string, unknown>;
      expect(honest['io.modelcontextprotocol/clientInfo']).toMatchObject({ name: 'toolgate-gateway' });
      expect(spoofed).toEqual(honest);
    });
});
