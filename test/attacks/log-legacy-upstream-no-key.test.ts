// Guard for the log-level route (e9c0944, 87430e6): the level goes in `_meta` only to a 2026-07-28 upstream.
// A 2025-11-25 upstream next to a 2026-07-28 one, served to a 2025-11-25 client that set a level and to
// 2026-07-28 requests that carry one: every call and read it receives has no `io.modelcontextprotocol/logLevel`
// (nor any other `io.modelcontextprotocol/` key), by the SDK path and the fast path.
import { describe, expect, it } from 'vitest';
import { httpFixture } from '../mcp/fixtures/processes.js';
import {
  cleanupsAfterEach,
  fastPathFor,
  gatewayOverHttp,
  inMemoryClient,
  modernExchange,
  ROOT,
  stdioUpstream,
  tempDir,
  text,
  untilListed,
  writePolicy,
} from '../harness.js';

const cleanups = cleanupsAfterEach();
const LEGACY = `${ROOT}/test/attacks/fixtures/legacy-logger.ts`;
const MODERN = `${ROOT}/test/gateway/fixtures/modern-logger.ts`;

describe('a 2025-11-25 upstream is never sent the 2026-07-28 log level', { timeout: 120_000 }, () => {
  for (const fast of [true, false])
    it(`from a 2025-11-25 client that set one or a 2026-07-28 request that carries one (fast path ${fast ? 'on' : 'off'})`, async () => {
      fastPathFor(cleanups, fast);
      const modern = await httpFixture(MODERN);
      cleanups.push(() => modern.stop());
      const policy = writePolicy(tempDir('log-no-key'), {
        gateway: {
          upstreams: { legacy: stdioUpstream(LEGACY), logs: { url: modern.url.href, connectTimeoutMs: 30_000 } },
          pin: 'off',
        },
        rules: [{ name: 'rest', result: 'allow' }],
        resources: [{ name: 'all', result: 'allow' }],
      });
      const on = await gatewayOverHttp(cleanups, policy);
      const client = await inMemoryClient(cleanups, on.gateway);
      await untilListed(client, 'legacy:meta');
      await untilListed(client, 'logs:note');
      await client.setLoggingLevel('debug');
      // The 2026-07-28 upstream is sent the level (the route works), the 2025-11-25 one is not.
      expect(await client.callTool({ name: 'logs:note', arguments: { tag: 'x' } }).then(text)).toBe('level: debug');
      const seen: string[] = [];
      seen.push(await client.callTool({ name: 'legacy:meta', arguments: {} }).then(text));
      seen.push(((await client.readResource({ uri: 'legacy://meta' })).contents[0] as { text: string }).text);
      const call = await modernExchange(
        on.url,
        'tools/call',
        { name: 'legacy:meta', arguments: {} },
        { logLevel: 'debug' },
      );
      seen.push((call.answer?.result as { content: { text: string }[] }).content[0]!.text);
      expect(seen).toHaveLength(3);
      // What the gateway sends a 2025-11-25 upstream in `_meta` (its progress token only) is seen.
      for (const meta of seen) expect(meta).not.toBe('');
      for (const meta of seen) expect(meta).not.toContain('io.modelcontextprotocol/');
    });
});
