// Attack on the log-level route (e9c0944, 87430e6): the gateway now knows each 2025-11-25 client's level
// (Downstream.level, Relay.setLevel), and holds a 2026-07-28 upstream's lines to it, but not a 2025-11-25
// upstream's. That upstream has one level for the whole gateway connection — the last any client set — so a
// client that never asked for lines, or asked for `error` only, is sent another client's `debug` level lines of
// its own calls; a listener (nothing in flight) is sent lines below the level it set. Real 2025-11-25 stdio
// upstreams (SDK v1, their own level filter; test/gateway/fixtures/late-logger.ts), clients in memory.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import {
  cleanupsAfterEach,
  fastPathFor,
  gatewayOn,
  inMemoryClient,
  ROOT,
  stdioUpstream,
  tempDir,
  text,
  untilListed,
  writePolicy,
  heardLines,
} from '../harness.js';

const cleanups = cleanupsAfterEach();
const LOGGER = `${ROOT}/test/attacks/fixtures/legacy-logger.ts`;
const LATE = `${ROOT}/test/gateway/fixtures/late-logger.ts`;

async function setup(fast: boolean) {
  fastPathFor(cleanups, fast);
  const policy = writePolicy(tempDir('log-legacy'), {
    gateway: { upstreams: { legacy: stdioUpstream(LOGGER), late: stdioUpstream(LATE) }, pin: 'off' },
    rules: [{ name: 'rest', result: 'allow' }],
  });
  const on = await gatewayOn(cleanups, policy);
  const client = async (): Promise<{ client: Client; heard: string[] }> => {
    const c = await inMemoryClient(cleanups, on.gateway);
    const heard = heardLines(c);
    await untilListed(c, 'legacy:noise');
    await untilListed(c, 'late:later');
    return { client: c, heard };
  };
  return client;
}

const noise = (client: Client, tag: string) => client.callTool({ name: 'legacy:noise', arguments: { tag } }).then(text);
const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

describe("a 2025-11-25 upstream's lines are held to each client's own level", { timeout: 120_000 }, () => {
  for (const fast of [true, false]) {
    it(`a client that set no level hears none of its calls' lines, whatever another client set (fast path ${fast ? 'on' : 'off'})`, async () => {
      const client = await setup(fast);
      const loud = await client();
      const quiet = await client();
      await loud.client.setLoggingLevel('debug');
      expect(await noise(loud.client, 'loud')).toBe('noised');
      await settle();
      expect(loud.heard).toEqual(['loud debug', 'loud info', 'loud warning', 'loud error']);
      // `quiet` never sent logging/setLevel: it asked for no line.
      expect(await noise(quiet.client, 'quiet')).toBe('noised');
      await settle();
      expect(quiet.heard).toEqual([]);
    });

    it(`a client that set error hears no debug line because another client set debug (fast path ${fast ? 'on' : 'off'})`, async () => {
      const client = await setup(fast);
      const strict = await client();
      const loud = await client();
      await strict.client.setLoggingLevel('error');
      await loud.client.setLoggingLevel('debug');
      expect(await noise(strict.client, 'strict')).toBe('noised');
      await settle();
      expect(strict.heard).toEqual(['strict error']);
    });

    it(`a listener that set error hears no info line of nobody's request (fast path ${fast ? 'on' : 'off'})`, async () => {
      const client = await setup(fast);
      const strict = await client();
      const loud = await client();
      await strict.client.setLoggingLevel('error');
      await loud.client.setLoggingLevel('debug');
      // An info line 300 ms after the answer, nothing in flight: to the listeners (one tenant), at their level.
      expect(await loud.client.callTool({ name: 'late:later', arguments: {} }).then(text)).toBe('answered');
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(loud.heard).toEqual(['a line of no request']);
      expect(strict.heard).toEqual([]);
    });
  }
});
