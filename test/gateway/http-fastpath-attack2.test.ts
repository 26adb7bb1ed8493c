// Second round of attacks on the gateway's fast path over Streamable HTTP (http-fast.ts, fastpath.ts):
// what the fast path does with the switch on must be what the SDK path does with it off.
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../harness.js';
import { httpGateway } from './fixtures/http-fast.js';
import { recordingHttpUpstream } from './fixtures/recording-http.js';

const cleanups = cleanupsAfterEach();

const ACCEPT = 'application/json, text/event-stream';

async function post(url: URL, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { accept: ACCEPT, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, session: response.headers.get('mcp-session-id'), text: await response.text() };
}

async function open(url: URL): Promise<Record<string, string>> {
  const init = await post(url, {
    jsonrpc: '2.0',
    id: 'init',
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'wire', version: '1' } },
  });
  const headers = { 'mcp-session-id': init.session!, 'mcp-protocol-version': '2025-11-25' };
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A slow call under `id`, a cancellation in `params` shape sent 300 ms in: whether the upstream saw it
 * cancelled, and whether the client got the call's answer.
 */
async function cancelRun(fast: boolean, id: number | string, params: Record<string, unknown>, batch = false) {
  const upstream = await recordingHttpUpstream(1500);
  cleanups.push(() => upstream.close());
  const { url } = await httpGateway(cleanups, upstream, fast);
  const headers = await open(url);
  const slow = post(
    url,
    { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'rec:slow', arguments: {} } },
    headers,
  );
  await sleep(300);
  const notification = { jsonrpc: '2.0', method: 'notifications/cancelled', params };
  const cancel = await post(url, batch ? [notification] : notification, headers);
  // A cancelled call is not answered: its stream may stay open (SDK path) or end empty (fast path).
  const answer = await Promise.race([slow, sleep(2500).then(() => ({ text: '' }))]);
  // The slow tool would have finished by now: a cancellation sent upstream has landed.
  await sleep(1500);
  return {
    cancelStatus: cancel.status,
    answered: answer.text.includes('slow done'),
    cancelledUpstream: upstream.received.some((r) => r['name'] === 'slow:cancelled'),
  };
}

describe('a cancellation over HTTP: the same with the fast path on and off', { timeout: 120_000 }, () => {
  const CASES: readonly [string, number | string, Record<string, unknown>][] = [
    ['plain', 42, { requestId: 42, reason: 'stop' }],
    // The SDK's schema for the params is a plain zod object: extra keys and `_meta` are stripped, not refused.
    ['params with _meta', 42, { requestId: 42, reason: 'stop', _meta: {} }],
    ['params with an extra key', 42, { requestId: 42, extra: 1 }],
    // The SDK's Protocol ignores a cancellation whose requestId is falsy (0, '').
    ['request id 0', 0, { requestId: 0, reason: 'stop' }],
    ["request id ''", '', { requestId: '', reason: 'stop' }],
  ];
  for (const [name, id, params] of CASES)
    it(`${name}: the call is stopped (or not) on both paths alike`, async () => {
      const on = await cancelRun(true, id, params);
      const off = await cancelRun(false, id, params);
      expect(on, name).toEqual(off);
    });
  // A batch goes to the SDK transport whole: on the SDK path its cancellation stops the call.
  it('a cancellation in a batch: the call is stopped on both paths alike', async () => {
    const params = { requestId: 42, reason: 'stop' };
    const on = await cancelRun(true, 42, params, true);
    const off = await cancelRun(false, 42, params, true);
    expect(off.cancelledUpstream).toBe(true);
    expect(on).toEqual(off);
  });
});
