// atk-json24: the cost of parseJsonText (src/json-text.ts) on a body that one client sends, through a real HTTP
// gateway. Every POST body is read by parseJsonText (http-wire.ts readJson) before anything is decided; its
// escaped-key search looked back from each key's end to the nearest backslash, so a body with one backslash
// early in a value and many keys after it cost the square of its length: an 870 kB body held the gateway's event
// loop ~11-35 s (4 MB, the body bound: minutes), and every other client (and the probes) waited. This test FAILS
// when one such body holds the gateway for long.
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach, gatewayOverHttp, ROOT, stdioUpstream, tempDir, writePolicy } from '../harness.js';

const cleanups = cleanupsAfterEach();
const SCOPE_SERVER = join(ROOT, 'test/gateway/fixtures/scope-server.ts');

describe('parseJsonText cost through the HTTP gateway (atk-json24)', () => {
  it('one body with a backslash in a value and 80,000 keys after it does not hold the gateway for seconds', async () => {
    const dir = tempDir('atk-json-text-cost');
    const policy = writePolicy(dir, {
      gateway: { upstreams: { s: { ...stdioUpstream(SCOPE_SERVER), connectTimeoutMs: 30_000 } }, pin: 'off' },
      rules: [{ name: 'rest', result: 'allow' }],
    });
    const { url } = await gatewayOverHttp(cleanups, policy);
    const keys = Array.from({ length: 80_000 }, (_, i) => `"k${i}":1`).join(',');
    const body = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"v":"\\\\",${keys}}}`;
    expect(body.length).toBeLessThan(1024 * 1024);
    const probe = new URL('/healthz', url);
    expect((await fetch(probe)).status).toBe(200);
    const started = performance.now();
    const big = new Promise<number>((resolve, reject) => {
      const req = request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(performance.now() - started));
      });
      req.on('error', reject);
      req.end(body);
    });
    // The gateway runs in this process: the longest its event loop was held is the longest gap between ticks.
    let last = performance.now();
    let held = 0;
    const ticks = setInterval(() => {
      const now = performance.now();
      held = Math.max(held, now - last);
      last = now;
    }, 20);
    const bigMs = await big.finally(() => clearInterval(ticks));
    expect((await fetch(probe)).status).toBe(200);
    // Wall clock on a loaded machine: a wide margin (the quadratic search: 11-35 s; linear: ~1 s).
    expect({ bigMs: bigMs < 5000, held: held < 2000 }).toEqual({ bigMs: true, held: true });
  }, 60_000);
});
