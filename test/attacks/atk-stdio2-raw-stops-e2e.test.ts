/**
 * Attack on stdio2's raw `tools/call` to a 2025-era stdio upstream as one promise (53a7c2f: upstream-call.ts's
 * RawToolCall, the raw request's one abort listener, one tick closing both deadline queues' turns) through a real
 * `toolgate gateway` process and a real stdio upstream, with the fast path and with it off: calls stopped by the
 * client (notifications/cancelled), by the gate's tool timeout, by the upstream's call timeout with a late answer,
 * late answers to stopped calls' upstream ids, and concurrent calls answered out of order with progress. Each
 * client request must get at most one answer, its own (no other call's result nor progress), a stopped call never a
 * success, and the fast path must answer and audit what the SDK path does.
 */
import { describe, expect, it } from 'vitest';
import { spliceGateway } from './fixtures/splice-gateway.js';

const CALL_TIMEOUT_MS = 600;
const TOOL_TIMEOUT_MS = 300;

/** The gateway with the fast path or without; a request gives its id. */
async function gateway(fast: boolean) {
  const g = await spliceGateway({
    callTimeoutMs: CALL_TIMEOUT_MS,
    tools: { 'a:say': { timeoutMs: TOOL_TIMEOUT_MS } },
    ...(fast ? {} : { env: { ...process.env, TOOLGATE_GATEWAY_FAST_PATH: 'off' } }),
  });
  const request = (method: string, params: Record<string, unknown>): number => {
    const { id, answered } = g.request(method, params);
    answered.catch(() => {}); // a stopped call may get no answer: `answers` and `answered(id)` are what count here
    return id;
  };
  return { ...g, request, stop: g.finish };
}

const result = (r: unknown): string => `{"jsonrpc":"2.0","id":__ID__,"result":${JSON.stringify(r)}}`;
const late = (name: string, r: unknown): string =>
  `{"jsonrpc":"2.0","id":__ID:${name}__,"result":${JSON.stringify(r)}}`;
const progressLine = (n: number): string =>
  `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":__TOKEN__,"progress":${n}}}`;
const LEAKED = { content: [{ type: 'text', text: 'LEAKED' }], structuredContent: { n: -1 } };

async function scenario(fast: boolean) {
  const g = await gateway(fast);
  const call = (tool: string, args: Record<string, unknown>, token?: string): number =>
    g.request('tools/call', {
      name: `a:${tool}`,
      arguments: args,
      ...(token ? { _meta: { progressToken: token } } : {}),
    });
  // A: stopped by the client while the upstream runs it.
  const a = call('say', { stash: 'a' }, 'pA');
  await new Promise((r) => setTimeout(r, 100));
  g.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: a, reason: 'no' } });
  // B: its upstream answers A's upstream id with a success first, then B's own.
  const b = call(
    'say',
    { lines: [late('a', LEAKED), progressLine(1), result({ content: [{ type: 'text', text: 'B' }] })] },
    'pB',
  );
  // C: stopped by the gate's tool timeout (300 ms) while the upstream runs it.
  const c = call('say', { stash: 'c' }, 'pC');
  // D: the upstream answers after the call timeout (600 ms): an unknown outcome, never the late success.
  const d = call(
    'typed',
    { delayMs: CALL_TIMEOUT_MS + 300, lines: [progressLine(7), result({ content: [], structuredContent: { n: 4 } })] },
    'pD',
  );
  // E: concurrent calls answered out of order, each with its own progress.
  const es: number[] = [];
  for (let i = 0; i < 8; i++)
    es.push(
      call(
        i % 2 ? 'typed' : 'say',
        {
          delayMs: (8 - i) * 20,
          lines: [progressLine(i), result({ content: [{ type: 'text', text: `E${i}` }], structuredContent: { n: i } })],
        },
        `pE${i}`,
      ),
    );
  const answersOf = async (ids: number[]) => {
    const out = [];
    for (const id of ids) {
      const { id: _id, ...rest } = await g.answered(id);
      out.push(rest);
    }
    return out;
  };
  const first = await answersOf([b, c, ...es]);
  await g.answered(d);
  // F, G: late successes to C's and D's upstream ids (stopped, timed out) before their own answers.
  await new Promise((r) => setTimeout(r, CALL_TIMEOUT_MS + 500)); // D's late answer has come and gone
  const f = call('say', { lines: [late('c', LEAKED), result({ content: [{ type: 'text', text: 'F' }] })] });
  const later = await answersOf([f]);
  await new Promise((r) => setTimeout(r, 300));
  const { id: _d, ...dAnswer } = g.answers.get(d)![0]!;
  const counts = Object.fromEntries([a, b, c, d, f, ...es].map((id) => [id, g.answers.get(id)?.length ?? 0]));
  const audit = (await g.stop()).map((r) => ({
    status: r['status'],
    outcome: r['outcome'],
    reason: r['reason'],
    effect: (r['decision'] as { effect?: unknown } | null)?.effect,
  }));
  return {
    ids: { a, b, c, d, f, es },
    first,
    later,
    d: dAnswer,
    counts,
    progress: Object.fromEntries([...g.progress].sort(([x], [y]) => x.localeCompare(y))),
    audit: audit.sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))),
  };
}

describe(
  'stopped, timed-out and concurrent raw calls through `toolgate gateway` (fast path against SDK path)',
  { timeout: 120_000 },
  () => {
    it('each request gets at most one answer, its own; a stopped call never a success; both paths the same', async () => {
      const fast = await scenario(true);
      const sdk = await scenario(false);
      const text = JSON.stringify(fast);
      expect(text).not.toContain('LEAKED');
      // At most one answer each; the client-cancelled A none at all (the SDK path answers none either).
      for (const n of Object.values(fast.counts)) expect(n).toBeLessThanOrEqual(1);
      expect(fast.counts[fast.ids.a]).toBe(0);
      // C: stopped by the gate's timeout, D: timed out upstream — both an unknown outcome (the late answers not taken).
      expect(JSON.stringify(fast.first[1])).toMatch(
        /still running the call when it was stopped: the outcome of the call is unknown/,
      );
      expect(JSON.stringify(fast.d)).toMatch(/outcome of the call is unknown/);
      // E: each its own result and its own progress.
      fast.ids.es.forEach((_, i) => {
        expect(JSON.stringify(fast.first[2 + i])).toContain(`E${i}`);
        expect(fast.progress[`pE${i}`]).toEqual([i]);
      });
      expect(fast.progress['pA']).toBeUndefined();
      expect(fast.progress['pD']).toBeUndefined();
      const { ids: _f, ...f } = fast;
      const { ids: _s, ...s } = sdk;
      expect(f).toEqual(s);
    });
  },
);
