// Issue 25.3: the gateway's fast path over Streamable HTTP (src/gateway/http-fast.ts on the listener,
// upstream-raw-http.ts towards a 2025-era HTTP upstream). The same seeded mix of calls — allowed, denied,
// asked (answered yes or no by elicitation), unknown tools, bad arguments, a limit's max, progress, an
// upstream's error result and thrown error, an upstream asking the client mid-call, an output schema kept
// and broken, reads allowed, denied and unroutable — is run through an in-process gateway served over HTTP
// once with the fast path and once with it off (TOOLGATE_GATEWAY_FAST_PATH=off: every request through the
// SDKs); the answers, what reached the upstream and the audit trail must be the same, and the fast run must
// really have gone raw (the upstream saw the gateway's own `toolgate-raw:` ids).
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import type { GatewayAuditRecord } from '../../src/gateway/index.js';
import { cleanupsAfterEach } from '../harness.js';
import { httpGateway, normal, sessionClient } from './fixtures/http-fast.js';
import { recordingHttpUpstream } from './fixtures/recording-http.js';

const cleanups = cleanupsAfterEach();

type Op = (client: Client, i: number) => Promise<unknown>;

const call =
  (name: string, args: (i: number) => Record<string, unknown>): Op =>
  async (client, i) => {
    let progress = 0;
    try {
      const result = await client.callTool({ name, arguments: args(i) }, undefined, {
        onprogress: () => void progress++,
      });
      return { result, progress };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };

const read =
  (uri: string): Op =>
  async (client) => {
    try {
      return { result: await client.readResource({ uri }) };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };

const OPS: readonly Op[] = [
  call('rec:echo', (i) => ({ text: `e${i}` })),
  call('rec:refund', (i) => ({ order: `S-${i}`, amount: 10 })),
  call('rec:refund', (i) => ({ order: `B-${i}`, amount: 500 })),
  call('rec:refund', (i) => ({ order: `A-yes-${i}`, amount: 70 })),
  call('rec:refund', (i) => ({ order: `A-no-${i}`, amount: 70 })),
  call('rec:nope', () => ({})),
  call('rec:refund', () => ({ order: 1, amount: 'lots' })),
  call('rec:slow', () => ({})),
  call('rec:fail', () => ({})),
  call('rec:boom', () => ({})),
  call('rec:confirm', () => ({})),
  call('rec:shape', () => ({})),
  call('rec:badshape', () => ({})),
  read('docs://public/readme'),
  read('docs://secret/keys'),
  read('nope://where/ever'),
];

/** The audit records of calls and reads, without what differs between runs. */
function auditOf(records: readonly GatewayAuditRecord[]): unknown[] {
  return records
    .map((record) => record as unknown as Record<string, unknown>)
    .filter((r) => r['type'] === 'tool' || r['type'] === 'resource')
    .map((r) => {
      const { time: _time, session: _session, durationMs: _duration, ...rest } = r;
      return normal(rest);
    });
}

const withoutId = (r: Record<string, unknown>) => {
  const { id: _id, ...rest } = r;
  return rest;
};

describe('the fast path of the gateway over Streamable HTTP', { timeout: 120_000 }, () => {
  it('answers a random mix exactly as the SDK path does; denied calls never reach the upstream; limits hold', async () => {
    const seed = Date.now() % 100_000;
    const next = prng(seed);
    const plan = [...OPS.keys(), ...Array.from({ length: 40 }, () => Math.floor(next() * OPS.length))];
    const runs = [];
    for (const fast of [true, false]) {
      const upstream = await recordingHttpUpstream();
      cleanups.push(() => upstream.close());
      const { url, records } = await httpGateway(cleanups, upstream, fast);
      const client = await sessionClient(cleanups, url);
      const answers = [];
      for (const [i, op] of plan.entries()) answers.push(await OPS[op]!(client, i));
      await new Promise((resolve) => setTimeout(resolve, 100));
      runs.push({ answers: normal(answers), received: [...upstream.received], audit: auditOf(records) });
    }
    const [fast, sdk] = runs as [(typeof runs)[0], (typeof runs)[0]];
    expect(fast.answers, `seed ${seed}`).toEqual(sdk.answers);
    expect(fast.received.map(withoutId), `seed ${seed}`).toEqual(sdk.received.map(withoutId));
    expect(fast.audit, `seed ${seed}`).toEqual(sdk.audit);
    // The fast run went raw to the upstream (its own ids), the other through the SDK Client (numbers).
    expect(fast.received.length).toBeGreaterThan(0);
    for (const r of fast.received) expect(String(r['id'])).toMatch(/^toolgate-raw:\d+$/);
    for (const r of sdk.received) expect(typeof r['id']).toBe('number');
    for (const run of runs) {
      const text = JSON.stringify(run.answers);
      expect(run.received.some((r) => /^(B|A-no)-/.test(String(r['order'])))).toBe(false);
      expect(run.received.some((r) => String(r['uri']).includes('secret'))).toBe(false);
      expect(text).not.toContain('TOP SECRET');
      const echoes = plan.filter((op) => op === 0).length;
      expect(run.received.filter((r) => r['name'] === 'echo')).toHaveLength(Math.min(5, echoes));
      if (echoes > 5) expect(text).toContain('refused by the limit \\"five-echoes\\"');
      expect(run.received.some((r) => String(r['order']).startsWith('A-yes-'))).toBe(true);
      expect(text).toContain('confirmed: accept');
    }
    // Progress went back to the client on the fast path too.
    expect((fast.answers as { progress?: number }[])[7]?.progress).toBe(3);
  });

  it("forwards a client's cancellation upstream under the gateway's own id; the session goes on", async () => {
    const upstream = await recordingHttpUpstream(3000);
    cleanups.push(() => upstream.close());
    const { url } = await httpGateway(cleanups, upstream, true);
    const client = await sessionClient(cleanups, url);
    const stop = new AbortController();
    const slow = client.callTool({ name: 'rec:slow', arguments: {} }, undefined, { signal: stop.signal });
    setTimeout(() => stop.abort('the user gave up'), 500);
    await expect(slow).rejects.toThrow();
    for (let tries = 0; !upstream.received.some((r) => r['name'] === 'slow:cancelled'); tries++) {
      if (tries > 50) throw new Error('the cancellation never reached the upstream');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(String(upstream.received.find((r) => r['name'] === 'slow:cancelled')?.['id'])).toMatch(/^toolgate-raw:/);
    const echoed = await client.callTool({ name: 'rec:echo', arguments: { text: 'after' } });
    expect(echoed.content).toEqual([{ type: 'text', text: 'echo: after' }]);
  });

  it('an upstream answering 404 (its session expired): the same answer on both paths, the call sent once', async () => {
    const answers = [];
    for (const fast of [true, false]) {
      const upstream = await recordingHttpUpstream();
      cleanups.push(() => upstream.close());
      const { url, records } = await httpGateway(cleanups, upstream, fast);
      const client = await sessionClient(cleanups, url);
      upstream.failWith = 404;
      const before = upstream.wire.length;
      answers.push(normal([await call('rec:echo', () => ({ text: 'gone' }))(client, 0), auditOf(records)]));
      const posted = upstream.wire
        .slice(before)
        .filter((w) => (w.body as { method?: string })?.method === 'tools/call');
      expect(posted).toHaveLength(1);
      upstream.failWith = undefined;
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(JSON.stringify(answers[0])).toContain('Session not found');
  });
});
