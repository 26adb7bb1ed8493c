/**
 * Attack on the lazy upstream round binding (681a8a2): the binding's digest (canonical JSON) cannot carry a
 * non-finite number, which JSON text spells as `1e400`; the gate's snapshot reads it as null and decides the
 * call. Before 681a8a2 the digest was taken before anything ran, so such a 2026-07-28 call was refused with
 * nothing sent upstream; now the digest is taken only when the upstream's round is wrapped, after the call
 * was sent. Fail closed (BRIEF): an error in binding the round means the call is not sent.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashOf } from '../../src/crypto.js';
import { bindable } from '../../src/gateway/upstream-rounds.js';
import { MemoryLedger, MemoryNonceStore } from '../../src/stores/memory.js';
import {
  cleanupsAfterEach,
  emptyFile,
  gatewayOverHttp,
  jsonLines,
  modernCallHeaders,
  modernMeta,
  ROOT,
  tempDir,
  writePolicy,
} from '../harness.js';
import { httpFixture } from '../mcp/fixtures/processes.js';

const MRTR = join(ROOT, 'test/gateway/fixtures/mrtr-server.ts');
const STATEFUL = 'test_input_required_result_request_state';
const cleanups = cleanupsAfterEach();

describe('the lazy upstream round binding on arguments it cannot digest', { timeout: 120_000 }, () => {
  it('a call whose arguments hold 1e400 is not sent upstream when its round cannot be bound', async () => {
    const dir = tempDir('round-binding-nonfinite');
    const seenFile = emptyFile(dir, 'seen');
    const upstream = await httpFixture(MRTR, { SEEN: seenFile });
    cleanups.push(() => upstream.stop());
    const policy = writePolicy(dir, {
      gateway: { upstreams: { mrtr: { url: upstream.url.href, prefix: false } }, pin: 'off' },
      rules: [{ name: 'everything', result: 'allow' }],
    });
    const { url } = await gatewayOverHttp(cleanups, policy, {
      gateway: () => ({
        requestState: {
          secret: 'the owner-set approval key of the gateway',
          nonces: new MemoryNonceStore(),
          ledger: new MemoryLedger(),
        },
      }),
      http: () => ({
        audience: false,
        authenticate: async (token) => ({ token, clientId: token, scopes: [STATEFUL] }),
      }),
    });
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: STATEFUL, arguments: { x: 'INF' }, _meta: modernMeta({ elicitation: { form: {} } }) },
    }).replace('"INF"', '1e400');
    const response = await fetch(url, {
      method: 'POST',
      headers: modernCallHeaders(STATEFUL, { authorization: 'Bearer alice' }),
      body,
    });
    const text = await response.text();
    const answer = JSON.parse(text.startsWith('{') ? text : /data: (.*)/.exec(text)![1]!) as {
      error?: { code: number; message: string };
      result?: unknown;
    };
    expect(answer.error, text).toBeDefined();
    // Nothing reached the upstream: the round could not be bound, so the call was not sent.
    expect(jsonLines(seenFile), text).toHaveLength(0);
  });

  it('bindable: a call it passes is one the digest carries (random values; else the digest is made first)', () => {
    const leaves = [0, -0, 1.5, 1e308, Infinity, -Infinity, NaN, 'é', '', true, false, null];
    let seed = 25;
    const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n) | 0;
    const make = (depth: number): unknown => {
      const r = rand(depth > 3 ? 1 : 3);
      if (r === 0) return leaves[rand(leaves.length)];
      if (r === 1) return Array.from({ length: rand(4) }, () => make(depth + 1));
      return Object.fromEntries(Array.from({ length: rand(4) }, (_, i) => [`k${i}`, make(depth + 1)]));
    };
    let refused = 0;
    for (let i = 0; i < 2000; i++) {
      const value = { a: make(0) };
      let digests = true;
      try {
        hashOf(value);
      } catch {
        digests = false;
      }
      if (!digests) refused++;
      expect(bindable(value), JSON.stringify(value)).toBe(digests);
    }
    expect(refused).toBeGreaterThan(0);
  });
});
