// Attacks on the stdio fast path's reused request controllers (fastpath.ts: a finished request's
// AbortController serves the next request when never aborted and no listener is left) through the real
// `toolgate gateway` process in front of the recording server: a late cancellation of a finished request
// must not stop the request now holding its controller; a cancellation of the new request must stop it
// (and only it); a cancelled request's controller must never serve another; ids reused one after another
// name the latest. Run with the fast path on and off: the answers and what the upstream saw are the same.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { RECORDING, stdioUpstream, tempDir, writePolicy } from '../harness.js';
import { jsonLine as line, rawStdioGateway } from './fixtures/spawn.js';

const children: ChildProcessWithoutNullStreams[] = [];
afterAll(() => {
  for (const child of children) child.kill();
});

const call = (id: string | number, name: string, args: Record<string, unknown> = {}) =>
  line({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const cancel = (id: string | number) =>
  line({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } });

async function session(fast: boolean) {
  const dir = tempDir('atk-fast-stdio-signals');
  const record = join(dir, 'received.jsonl');
  writeFileSync(record, '');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { rec: stdioUpstream(RECORDING, { RECORD: record, RECORD_IDS: '1', SLOW_MS: '1200' }) },
      pin: 'off',
    },
    rules: [{ name: 'rest', result: 'allow' }],
  });
  // The upstream's tools listed (it starts in the background).
  const gateway = await rawStdioGateway(policy, { fast, children, listed: (text) => text.includes('rec:slow') });
  const received = () =>
    readFileSync(record, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { name?: string; completed?: boolean; text?: string });
  return { ...gateway, received };
}

const text = (messages: Record<string, unknown>[]): string => JSON.stringify(messages);

describe('attacks on the stdio fast path’s reused request controllers', { timeout: 120_000 }, () => {
  it('a cancellation stops exactly the request it names, never the one that took over a finished controller', async () => {
    const runs = [];
    for (const fast of [true, false]) {
      const s = await session(fast);
      // 1 finishes; 2 (slow) takes over its controller on the fast path; a late cancel of 1 must not stop 2.
      s.write(call(1, 'rec:echo', { text: 'one' }));
      expect(text(await s.answer(1))).toContain('echo: one');
      s.write(call(2, 'rec:slow'));
      await sleep(200);
      s.write(cancel(1));
      const two = await s.answer(2);
      // 3 (slow) cancelled by its own id: stopped, not answered; its controller is aborted.
      s.write(call(3, 'rec:slow'));
      await sleep(200);
      s.write(cancel(3));
      // 4 (slow) after it; a second, late cancel of 3 must not touch 4. Then 5 echoes under 4's watch.
      s.write(call(4, 'rec:slow'));
      await sleep(200);
      s.write(cancel(3));
      s.write(call(5, 'rec:echo', { text: 'five' }));
      const four = await s.answer(4);
      const three = await s.answer(3, 500);
      // An id used again after its request finished: a cancellation names the latest request under it.
      s.write(call(6, 'rec:echo', { text: 'six' }));
      await s.answer(6);
      s.write(call(6, 'rec:slow'));
      await sleep(200);
      s.write(cancel(6));
      await sleep(1600);
      const six = s.answers(6);
      // Many short calls in a row, each cancelled after its answer (late): the next slow one still finishes.
      for (let i = 0; i < 10; i++) {
        s.write(call(100 + i, 'rec:echo', { text: `n${i}` }));
        await s.answer(100 + i);
        s.write(cancel(100 + i));
      }
      s.write(call(200, 'rec:slow'));
      await sleep(100);
      for (let i = 0; i < 10; i++) s.write(cancel(100 + i));
      const last = await s.answer(200);
      const received = s.received();
      s.close();
      expect(text(two), `fast ${fast}`).toContain('slow done');
      expect(three, `fast ${fast}`).toEqual([]);
      expect(text(four), `fast ${fast}`).toContain('slow done');
      expect(text(last), `fast ${fast}`).toContain('slow done');
      expect(
        six.map((m) => ('result' in m ? 'result' : 'error')),
        `fast ${fast}`,
      ).toEqual(['result']);
      expect(text(six)).toContain('echo: six');
      runs.push({
        cancelled: received.filter((r) => r.name === 'slow:cancelled').length,
        completed: received.filter((r) => r.completed === true).length,
      });
    }
    const [fast, sdk] = runs;
    // Requests 3 and the second 6 cancelled upstream; 2, 4 and 200 ran to the end (3 and 6 too, after the cancel).
    expect(fast).toEqual(sdk);
    expect(fast!.cancelled).toBe(2);
  });
});
