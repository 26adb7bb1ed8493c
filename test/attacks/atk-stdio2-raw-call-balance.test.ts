/**
 * Attack on 53a7c2f's RawToolCall (src/gateway/upstream-call.ts) over RawRequests.send (upstream-raw.ts): many raw
 * `tools/call`s stopped by their signal (before and while sent), timed out, answered with results that fail the
 * output schema, answered late after a stop, answered twice, and failed by the connection closing, in random order.
 * Each call must settle once; its in-flight count and progress token be given back once (a count given back twice
 * would hide another call of the same client in flight: Upstream.requester attributes an upstream's sampling
 * request by it); no abort listener nor pending entry be left; a stopped or timed-out call never succeed; a stop
 * be told upstream (notifications/cancelled) and noted as an unknown outcome.
 */
import { getEventListeners } from 'node:events';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { RawToolCall, type CallScope, type ClientUpstream } from '../../src/gateway/upstream-call.js';
import { RawRequests } from '../../src/gateway/upstream-raw.js';
import { idOf, recorder } from '../gateway/fixtures/raw-recorder.js';

function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

describe('RawToolCall over RawRequests.send, random stops, timeouts and answers', () => {
  for (let seed = 1; seed <= 6; seed++)
    it(`seed ${seed}: each call settles once, gives back what it took, leaves no listener`, async () => {
      const r = random(seed);
      const { transport, sent } = recorder();
      const raw = new RawRequests(() => transport);
      let inflight = 0;
      let tokens = 0;
      const upstream = {
        namespace: 'a',
        options: { callTimeoutMs: 40 },
        session: null,
        offersTasks: false,
        forward: () => Promise.reject(new Error('not used')),
        requestBegan: () => void inflight++,
        requestEnded: () => void inflight--,
        relayProgress: () => {
          tokens++;
          return { id: `t${tokens}`, done: () => void tokens-- };
        },
        requestOptions: () => ({}),
        taskCreated: () => undefined,
      } as unknown as ClientUpstream;
      const definition = {
        name: 'typed',
        inputSchema: { type: 'object' as const },
        outputSchema: { type: 'object' as const, properties: { n: { type: 'number' } }, required: ['n'] },
      };
      const calls: {
        controller: AbortController;
        scope: CallScope;
        settled: string[];
        id?: string;
        stopped: boolean;
        answered?: boolean;
      }[] = [];
      const N = 60;
      for (let i = 0; i < N; i++) {
        const controller = new AbortController();
        const scope = { server: {}, progressToken: r() < 0.5 ? `p${i}` : undefined, raw: true } as unknown as CallScope;
        const entry: (typeof calls)[number] = { controller, scope, settled: [], stopped: false };
        calls.push(entry);
        if (r() < 0.1) {
          controller.abort(new Error('before'));
          entry.stopped = true;
        }
        const before = sent.length;
        void new Promise((resolve, reject) => {
          const call = new RawToolCall(
            upstream,
            scope,
            { signal: controller.signal, name: 'typed', tasks: false },
            resolve,
            reject,
          );
          call.token = scope.progressToken !== undefined ? upstream.relayProgress(scope) : undefined;
          call.validator = raw.outputValidator(definition, 'typed');
          raw.send('tools/call', { name: 'typed', arguments: {} }, { timeout: 40, signal: controller.signal }, call);
        }).then(
          (v) => entry.settled.push(`ok ${JSON.stringify(v)}`),
          (e: Error) => entry.settled.push(`error ${e.message}`),
        );
        if (sent.length > before) entry.id = idOf(sent[sent.length - 1]!);
      }
      const answer = (id: string, result: unknown): boolean =>
        raw.take({ jsonrpc: '2.0', id, result } as JSONRPCMessage);
      // Random events on the calls sent.
      for (let step = 0; step < 200; step++) {
        const entry = calls[Math.floor(r() * calls.length)]!;
        if (entry.id === undefined) continue;
        const what = r();
        if (what < 0.3 && !entry.controller.signal.aborted) {
          entry.controller.abort(new Error('stopped'));
          if (!entry.answered) entry.stopped = true;
        } else if (what < 0.5) answer(entry.id, { content: [], structuredContent: { n: 'x' } });
        else if (what < 0.7) answer(entry.id, { content: [], structuredContent: { n: 1 } });
        else if (what < 0.8)
          raw.take({ jsonrpc: '2.0', id: entry.id, error: { code: -1, message: 'no' } } as JSONRPCMessage);
        if (what >= 0.3 && what < 0.8) entry.answered = true;
        if (r() < 0.05) await new Promise((resolve) => setTimeout(resolve, 15));
      }
      if (r() < 0.5) raw.fail();
      await new Promise((resolve) => setTimeout(resolve, 200)); // every call's 40 ms timeout passed
      for (const [i, entry] of calls.entries()) {
        expect(entry.settled, `call ${i}`).toHaveLength(1);
        expect(getEventListeners(entry.controller.signal, 'abort'), `call ${i}`).toHaveLength(0);
        // Stopped before any answer: never a success; an unknown outcome (or a timeout's, also unknown).
        if (entry.stopped) expect(entry.settled[0], `call ${i}`).toMatch(/^error .*(unknown|before)/);
        if (entry.settled[0]!.startsWith('ok')) expect(entry.scope.result, `call ${i}`).toBeDefined();
      }
      // A stopped call that succeeded was answered before its stop.
      expect(inflight).toBe(0);
      expect(tokens).toBe(0);
      // A later answer to any id is dropped (nothing pending).
      for (const entry of calls) if (entry.id) expect(answer(entry.id, { content: [] })).toBe(true);
      expect(calls.every((e) => e.settled.length === 1)).toBe(true);
      // Each stop of a call in flight told upstream.
      const cancelled = sent.filter((m) => (m as { method?: string }).method === 'notifications/cancelled').length;
      expect(cancelled).toBeGreaterThan(0);
    });
});
