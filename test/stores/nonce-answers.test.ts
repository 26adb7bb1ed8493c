/**
 * A nonce store is a single-use check: only `true` is fresh. The gateway's store-backed approvals treated any
 * truthy answer as fresh, so with a store answering 'OK' one answered approval ran its call on every retry.
 * Through the real gateway (an MCP client, a real upstream process), on shared approval stores.
 */
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createGateway, gatewayConfigOf, type Gateway } from '../../src/gateway/index.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';
import { memoryStores } from '../../src/stores/index.js';
import type { NonceStore } from '../../src/stores/types.js';

const DOCS = join(process.cwd(), 'test/gateway/fixtures/docs-server.ts');
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});
const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

async function gatewayWith(nonces: NonceStore) {
  const stores = memoryStores();
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-nonce-')));
  const file = join(dir, 'policy.yaml');
  writeFileSync(
    file,
    stringify({
      version: 1,
      gateway: { upstreams: { docs: { command: process.execPath, args: ['--import', 'tsx', DOCS] } } },
      rules: [
        { name: 'echo-asks', tools: 'docs:echo', result: 'ask', reason: 'echo needs a person' },
        { name: 'rest', namespace: 'docs', result: 'allow' },
      ],
    }),
  );
  const set = await loadPolicyFile(file);
  const config = gatewayConfigOf(set);
  const gateway: Gateway = await createGateway({
    policy: set,
    upstreams: config.upstreams,
    pins: null,
    approvals: { store: stores.approvals, nonces, secret: 'a shared secret of the replicas' },
  });
  cleanups.push(() => gateway.close());
  const [a, b] = InMemoryTransport.createLinkedPair();
  await gateway.createServer().connect(b);
  const client = new Client({ name: 'attacker', version: '1.0.0' });
  await client.connect(a);
  cleanups.push(() => client.close());
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
