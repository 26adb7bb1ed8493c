// Attack on the log-level route (e9c0944, 87430e6): "a 2026-07-28 upstream's line goes only to the one request
// in flight that carried a level, at or above it". A 2026-07-28 upstream over stdio that keeps to the rule (it
// logs only for a request that carried a level) may still log for a request after it answered it; nothing on
// stdio ties the line to that request, and Relay.log gives it to whichever other client is alone in flight
// with a level — bob's line of bob's call reaches alice. ARCHITECTURE.md guards a late line of a finished
// request only for the listeners (nothing in flight), not for the one client in flight.
// A real 2026-07-28 stdio upstream (fixtures/modern-late-logger.ts); alice and bob are 2025-11-25 clients in
// memory that set a level (their level goes upstream per request), and a 2026-07-28 client over HTTP.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
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
  heardLines,
} from '../harness.js';

const cleanups = cleanupsAfterEach();
const LOGGER = `${ROOT}/test/attacks/fixtures/modern-late-logger.ts`;

async function setup(fast: boolean) {
  fastPathFor(cleanups, fast);
  const policy = writePolicy(tempDir('log-late'), {
    gateway: { upstreams: { late: { ...stdioUpstream(LOGGER), connectTimeoutMs: 30_000 } }, pin: 'off' },
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

describe(
  'a line a 2026-07-28 upstream sends for a request after answering it reaches no other client',
  { timeout: 120_000 },
  () => {
    for (const fast of [true, false]) {
      it(`2025-11-25 clients: bob's late line does not reach alice in flight (fast path ${fast ? 'on' : 'off'})`, async () => {
        const { client } = await setup(fast);
        const alice = await client();
        const bob = await client();
        expect(await bob.client.callTool({ name: 'late:later', arguments: { tag: 'bob-secret' } }).then(text)).toBe(
          'level: debug',
        );
        // alice alone in flight while bob's request, answered, still logs upstream.
        expect(await alice.client.callTool({ name: 'late:hold', arguments: { ms: 1000 } }).then(text)).toBe(
          'level: debug',
        );
        expect(alice.heard).toEqual([]);
      });

      it(`a 2026-07-28 client in flight with its own level does not hear bob's late line (fast path ${fast ? 'on' : 'off'})`, async () => {
        const { on, client } = await setup(fast);
        const bob = await client();
        expect(await bob.client.callTool({ name: 'late:later', arguments: { tag: 'bob-secret' } }).then(text)).toBe(
          'level: debug',
        );
        const alice = await modernExchange(
          on.url,
          'tools/call',
          { name: 'late:hold', arguments: { ms: 1000 } },
          {
            logLevel: 'debug',
          },
        );
        expect(alice.answer?.result).toMatchObject({ content: [{ text: 'level: debug' }] });
        expect(alice.logs).toEqual([]);
      });
    }
  },
);
