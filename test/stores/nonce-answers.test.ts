/**
 * A nonce store is a single-use check: only `true` is fresh. The gateway's store-backed approvals treated any
 * truthy answer as fresh, so with a store answering 'OK' one answered approval ran its call on every retry.
 * Through the real gateway (an MCP client, a real upstream process), on shared approval stores.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { memoryStores } from '../../src/stores/index.js';
import type { NonceStore } from '../../src/stores/types.js';
import {
  cleanupsAfterEach,
  DOCS,
  gatewayOn,
  inMemoryClient,
  stdioUpstream,
  tempDir,
  text,
  writePolicy,
} from '../harness.js';

const cleanups = cleanupsAfterEach();

async function gatewayWith(nonces: NonceStore) {
  const stores = memoryStores();
  const policy = writePolicy(tempDir('nonce'), {
    gateway: { upstreams: { docs: stdioUpstream(DOCS) } },
    rules: [
      { name: 'echo-asks', tools: 'docs:echo', result: 'ask', reason: 'echo needs a person' },
      { name: 'rest', namespace: 'docs', result: 'allow' },
    ],
  });
  const { gateway } = await gatewayOn(cleanups, policy, () => ({
    approvals: { store: stores.approvals, nonces, secret: 'a shared secret of the replicas' },
  }));
  const client = await inMemoryClient(cleanups, gateway);
  const echo = () => client.callTool({ name: 'docs:echo', arguments: { text: 'x' } }) as Promise<CallToolResult>;
  return { stores, echo };
}

describe('the gateway’s store approvals: only `true` from the nonce store is fresh', { timeout: 120_000 }, () => {
  it('a store answering "OK": an answered approval runs nothing, however often the client retries', async () => {
    const { stores, echo } = await gatewayWith({ consume: async () => 'OK' as unknown as boolean });
    const asked = await echo();
    const id = /request ([0-9a-f]{64})/.exec(text(asked))?.[1];
    expect(id).toBeDefined();
    expect(await stores.approvals.answer(id!, { effect: 'allow', approver: 'bob' })).toBe(true);
    for (let i = 0; i < 3; i++) {
      const retry = await echo();
      expect(text(retry)).not.toBe('echo: x');
      expect(retry.isError).toBe(true);
      expect(text(retry)).toMatch(/nonce store.*"OK"/);
    }
  });

  it('a store that answers true once: the answered approval runs the call once, then it is asked anew', async () => {
    const used = new Set<string>();
    const { stores, echo } = await gatewayWith({
      consume: async (nonce) => (used.has(nonce) ? false : (used.add(nonce), true)),
    });
    const id = /request ([0-9a-f]{64})/.exec(text(await echo()))?.[1];
    await stores.approvals.answer(id!, { effect: 'allow', approver: 'bob' });
    expect(text(await echo())).toBe('echo: x');
    const again = await echo();
    expect(again.isError).toBe(true);
    expect(text(again)).not.toBe('echo: x');
  });
});
