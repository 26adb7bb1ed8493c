// Issue 25.3 (2f81365): the 2026-07-28 fast path takes its requests' AbortControllers from the gate's spare pool
// and gives each back when its response closed with the whole answer written. Attack: clients that leave
// right after sending (their controllers aborted) mixed with concurrent calls that finish, on a real gateway
// over HTTP in front of the real 2026-07-28 fixture. Held: each finished call is answered with its own id and
// text, no call after a cancelled one is refused as cancelled (an aborted controller handed on), and what the
// pool holds afterwards is never aborted and has no listener on its signal (the pool emptied before each round,
// so what a closing response gives back has room). Two guards stand in the way, each enough alone: modern-fast.ts
// gives back only a response closed with its answer written, and keepController refuses an aborted controller or
// one with a listener. Fails with both dropped: modern-fast.ts giving back on every close (after its abort) and
// keepController's aborted check gone; or keeping before the abort and keepController's listener check gone.
import { getEventListeners } from 'node:events';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { keepController, takeController } from '../../src/gate/controller-pool.js';
import {
  cleanupsAfterEach,
  fastPathFor,
  gatewayOverHttp,
  modernCallHeaders,
  modernMeta,
  rawModernCall,
} from '../harness.js';
import { modernUpstreamPolicy } from '../gateway/fixtures/modern-fast.js';

const cleanups = cleanupsAfterEach();

const body = (id: number, text: string): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'mod:echo', arguments: { text }, _meta: modernMeta() },
  });

async function call(url: URL, id: number, text: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { method: 'POST', headers: modernCallHeaders('mod:echo'), body: body(id, text) });
  return { status: response.status, text: await response.text() };
}

/** A POST written whole on a raw socket, the socket destroyed as soon as it was written (the client left). */
function leave(url: URL, id: number): Promise<void> {
  const bytes = rawModernCall(url, 'mod:echo', id, { text: `gone-${id}` });
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(bytes, () => {
        socket.destroy();
        resolve();
      });
    });
    socket.once('error', () => resolve());
  });
}

/** Every controller the pool holds now, each checked, then given back (`back`) or dropped. */
function pooled(back: boolean): { aborted: number; listened: number } {
  const taken: AbortController[] = [];
  // More than the pool keeps (8): the rest are new controllers, checked alike.
  for (let i = 0; i < 12; i++) taken.push(takeController());
  const aborted = taken.filter((c) => c.signal.aborted).length;
  const listened = taken.filter((c) => getEventListeners(c.signal, 'abort').length > 0).length;
  if (back) for (const c of taken) keepController(c);
  return { aborted, listened };
}

describe('the modern fast path and the spare controller pool', { timeout: 30_000 }, () => {
  it('never hands a later request an aborted controller or one with a listener, nor one request another’s answer', async () => {
    const { policy } = await modernUpstreamPolicy(cleanups, 'atk-gw25-pool', {
      name: 'many',
      tool: 'mod:pay',
      max: 1000,
    });
    fastPathFor(cleanups, true);
    const { url } = await gatewayOverHttp(cleanups, policy);
    // The modern handler (and its fast path) is made on the first 2026-07-28 request.
    expect((await call(url, 1, 'warm')).status).toBe(200);
    for (let round = 0; round < 4; round++) {
      // The pool emptied first (what it held checked), so a controller given back now has room to be kept.
      expect(pooled(false)).toEqual({ aborted: 0, listened: 0 });
      const work: Promise<unknown>[] = [];
      const answers: Promise<{ status: number; text: string }>[] = [];
      for (let i = 0; i < 6; i++) {
        const id = round * 100 + i * 2 + 10;
        work.push(leave(url, id + 1));
        if (round % 2 === 1) answers.push(call(url, id, `text-${id}`));
      }
      await Promise.all(work);
      for (const [i, answer] of (await Promise.all(answers)).entries()) {
        const id = round * 100 + i * 2 + 10;
        expect(answer.status, answer.text).toBe(200);
        const parsed = JSON.parse(answer.text) as { id: number; result: { content: { text: string }[] } };
        expect(parsed.id).toBe(id);
        expect(parsed.result.content[0]!.text).toBe(`echo: text-${id}`);
      }
      // The cancelled requests' handlers settle once their upstream call came back.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(pooled(true)).toEqual({ aborted: 0, listened: 0 });
      // The calls after the cancelled ones: none is told it was cancelled.
      for (let i = 0; i < 4; i++) {
        const id = round * 100 + 90 + i;
        const answer = await call(url, id, `after-${id}`);
        expect(answer.status, answer.text).toBe(200);
        expect(answer.text).toContain(`echo: after-${id}`);
      }
    }
  });
});
