/**
 * Attack on extensibleCopy (src/gateway/copies.ts, branch `stdio`): the call's gate context is copied by
 * `Object.assign({}, base)` unless `Object.hasOwn(base, '__proto__')`, where it used to be `{ ...base }`.
 * The two are asked about `__proto__` separately: a context that is a Proxy (an embedder's read-only or
 * logging wrapper over data that came from JSON, which can hold an own `__proto__` key) answers the first
 * question "no such key" and the second "an enumerable own key" — and Object.assign then *sets the copy's
 * prototype* to that key's value. The spread never does (CreateDataProperty: an own key at worst). Here the
 * value carries a resolved `allowlist` that permits `docs:slow`: inherited by the copy, it replaces the agent
 * layer (`tools: [docs:echo]`) and a tool the context refuses runs on the real stdio upstream.
 */
import { describe, expect, it } from 'vitest';
import { ToolAllowlist } from '../../src/allowlist.js';
import { extensibleCopy } from '../../src/gateway/copies.js';
import {
  cleanupsAfterEach,
  DOCS,
  gatewayOn,
  stdioUpstream,
  tempDir,
  untilListed,
  writePolicy,
  text,
} from '../harness.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';

const cleanups = cleanupsAfterEach();

/** `target` behind a Proxy whose own `__proto__` key is hidden on every other look (the 1st, 3rd, …). */
function flickering<T extends object>(target: T): T {
  let looks = 0;
  return new Proxy(target, {
    getOwnPropertyDescriptor(t, key) {
      if (key === '__proto__' && looks++ % 2 === 0) return undefined;
      return Reflect.getOwnPropertyDescriptor(t, key);
    },
  });
}

describe('extensibleCopy of a context that answers twice about __proto__', () => {
  it("never takes the copy's prototype from the context (as the spread never did)", () => {
    const base = flickering(
      JSON.parse('{"agent":{"name":"a","tools":["docs:echo"]},"__proto__":{"allowlist":"granted"}}') as object,
    );
    const copy = extensibleCopy(base) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(copy['allowlist']).toBeUndefined();
  });

  it('a tool the context refuses does not run on the stdio upstream', { timeout: 60_000 }, async () => {
    const dir = tempDir('atk-copy-proxy');
    const policy = writePolicy(dir, {
      gateway: { upstreams: { docs: { ...stdioUpstream(DOCS), connectTimeoutMs: 30_000 } }, pin: 'off' },
      rules: [{ name: 'all', result: 'allow' }],
    });
    const { gateway, records } = await gatewayOn(cleanups, policy);
    const data = JSON.parse('{"agent":{"name":"a","tools":["docs:echo"]},"__proto__":{}}') as Record<string, unknown>;
    (data['__proto__'] as Record<string, unknown>)['allowlist'] = ToolAllowlist.resolve(['docs:echo', 'docs:slow']);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await gateway.createServer({ context: flickering(data) }).connect(serverSide);
    const client = new Client({ name: 'embedder', version: '1' });
    await client.connect(clientSide);
    cleanups.push(() => client.close());
    await untilListed(client, 'docs:echo');
    // Twice: whichever parity the Proxy's looks are at when the call's copy is made.
    for (let i = 0; i < 2; i++) {
      const result = await client.callTool({ name: 'docs:slow', arguments: {} });
      expect(result.isError, text(result)).toBe(true);
    }
    expect(records.filter((r) => r.type === 'tool' && r.status === 'ok')).toEqual([]);
  });
});
