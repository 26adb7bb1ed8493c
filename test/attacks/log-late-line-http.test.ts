// Guard for the log-level route (e9c0944, 87430e6) over Streamable HTTP, where a 2026-07-28 upstream's line can
// only travel on the stream of the request it is for: a line the upstream sends for bob's request after it
// answered it, or after bob gave up on it (the gateway closes that stream), reaches no one — not alice, alone
// in flight with a level. (Over stdio it does: log-late-line.test.ts.) A real 2026-07-28 upstream over HTTP
// (fixtures/modern-late-logger.ts --http), 2025-11-25 clients in memory and a 2026-07-28 client over HTTP.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { httpFixture } from '../mcp/fixtures/processes.js';
import {
  cleanupsAfterEach,
  fastPathFor,
  gatewayOverHttp,
  inMemoryClient,
  modernExchange,
  ROOT,
  tempDir,
  text,
  untilListed,
  writePolicy,
  heardLines,
} from '../harness.js';

const cleanups = cleanupsAfterEach();
const LOGGER = `${ROOT}/test/attacks/fixtures/modern-late-logger.ts`;

async function setup(fast: boolean) {
  fastPathFor(cleanups, fast);
  const upstream = await httpFixture(LOGGER);
  cleanups.push(() => upstream.stop());
  const policy = writePolicy(tempDir('log-late-http'), {
    gateway: { upstreams: { late: { url: upstream.url.href, connectTimeoutMs: 30_000 } }, pin: 'off' },
    rules: [{ name: 'rest', result: 'allow' }],
  });
  const on = await gatewayOverHttp(cleanups, policy);
  const client = async (): Promise<{ client: Client; heard: string[] }> => {
    const c = await inMemoryClient(cleanups, on.gateway);
    const heard = heardLines(c);
    await untilListed(c, 'late:later');
    await c.setLoggingLevel('debug');
    return { client: c, heard };
  };
  return { on, client };
}

const hold = (client: Client, ms: number) => client.callTool({ name: 'late:hold', arguments: { ms } }).then(text);

describe("over HTTP a 2026-07-28 upstream's line for bob's request never reaches alice", { timeout: 120_000 }, () => {
  for (const fast of [true, false]) {
    it(`a line after bob's answer: to no one (fast path ${fast ? 'on' : 'off'})`, async () => {
      const { on, client } = await setup(fast);
      const alice = await client();
      const bob = await client();
      expect(await bob.client.callTool({ name: 'late:later', arguments: { tag: 'bob-secret' } }).then(text)).toBe(
        'level: debug',
      );
      expect(await hold(alice.client, 800)).toBe('level: debug');
      const modern = await modernExchange(
        on.url,
        'tools/call',
        { name: 'late:later', arguments: { tag: 'bob-modern' } },
        { logLevel: 'debug' },
      );
      expect(modern.logs).toEqual([]);
      expect(await hold(alice.client, 800)).toBe('level: debug');
      expect(alice.heard).toEqual([]);
      expect(bob.heard).toEqual([]);
    });

    it(`a line after bob gave up on his call: to no one, not to alice in flight (fast path ${fast ? 'on' : 'off'})`, async () => {
      const { on, client } = await setup(fast);
      const alice = await client();
      const bob = await client();
      const gaveUp = bob.client
        .callTool({ name: 'late:slow', arguments: { tag: 'bob-secret', ms: 400 } }, undefined, {
          signal: AbortSignal.timeout(100),
        })
        .then(
          () => 'answered',
          () => 'gave up',
        );
      expect(await gaveUp).toBe('gave up');
      expect(await hold(alice.client, 1000)).toBe('level: debug');
      const modern = await modernExchange(
        on.url,
        'tools/call',
        { name: 'late:hold', arguments: { ms: 1000 } },
        { logLevel: 'debug' },
      );
      expect(modern.answer?.result).toMatchObject({ content: [{ text: 'level: debug' }] });
      expect(modern.logs).toEqual([]);
      expect(alice.heard).toEqual([]);
      expect(bob.heard).toEqual([]);
    });
  }
});
