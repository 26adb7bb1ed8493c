// Attack on the gate's pool of finished gateway calls' AbortControllers (execute.ts, gatewayCall): through the
// real `toolgate gateway` over stdio, 60 calls at once to two upstreams — short echoes, slow calls some of
// them cancelled while running, slow calls to an upstream whose own timeout stops them, and late cancellations
// of echoes already answered. A cancellation or a timeout must stop exactly its own call: every echo answered
// with its own text once, every slow call not cancelled finished, the upstream told of exactly the cancelled
// ones. Fast path on and off alike.
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

const call = (id: number, name: string, args: Record<string, unknown> = {}) =>
  line({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const cancel = (id: number) =>
  line({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } });

async function session(fast: boolean) {
  const dir = tempDir('atk-stdio-pool-storm');
  const record = join(dir, 'received.jsonl');
  writeFileSync(record, '');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: {
        rec: stdioUpstream(RECORDING, { RECORD: record, RECORD_IDS: '1', SLOW_MS: '700' }),
        tmo: { ...stdioUpstream(RECORDING, { RECORD: join(dir, 'tmo.jsonl'), SLOW_MS: '5000' }), callTimeoutMs: 300 },
      },
      pin: 'off',
    },
    rules: [{ name: 'rest', result: 'allow' }],
  });
  // The upstream's tools listed (it starts in the background).
  const gateway = await rawStdioGateway(policy, {
    fast,
    children,
    listed: (text) => text.includes('rec:slow') && text.includes('tmo:slow'),
  });
  const received = () =>
    readFileSync(record, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { name?: string; completed?: boolean; text?: string });
  return { ...gateway, received };
}

/** A small seeded generator (mulberry32): the same storm on both runs. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Kind = 'echo' | 'slow' | 'cancelled' | 'timeout';

describe(
  'atk: the gate’s controller pool under a storm of cancels and timeouts over stdio',
  { timeout: 180_000 },
  () => {
    it('stops exactly the calls cancelled or timed out, and answers every other call with its own result', async () => {
      const runs = [];
      for (const fast of [true, false]) {
        const s = await session(fast);
        const next = random(7);
        const kinds = new Map<number, Kind>();
        for (let round = 0; round < 3; round++) {
          const base = 1000 * (round + 1);
          // Echoes first (they finish and put controllers back), then slow calls take them, some cancelled.
          for (let i = 0; i < 60; i++) {
            const id = base + i;
            const r = next();
            const kind: Kind = r < 0.45 ? 'echo' : r < 0.7 ? 'slow' : r < 0.85 ? 'cancelled' : 'timeout';
            kinds.set(id, kind);
            if (kind === 'echo') s.write(call(id, 'rec:echo', { text: `t${id}` }));
            else s.write(call(id, kind === 'timeout' ? 'tmo:slow' : 'rec:slow'));
            if (next() < 0.3) await sleep(Math.floor(next() * 20));
          }
          await sleep(200);
          for (const [id, kind] of kinds) {
            if (id < base) continue;
            // A late cancellation of an answered echo, and the cancellation of a running slow call.
            if (kind === 'cancelled' || (kind === 'echo' && s.answers(id).length > 0 && next() < 0.5))
              s.write(cancel(id));
          }
          await sleep(1500);
        }
        const wrong: string[] = [];
        for (const [id, kind] of kinds) {
          const got = await s.answer(id, kind === 'cancelled' ? 0 : 8000);
          const shown = JSON.stringify(got);
          const ok =
            kind === 'echo'
              ? got.length === 1 && shown.includes(`echo: t${id}"`) && !shown.includes('isError":true')
              : kind === 'slow'
                ? got.length === 1 && shown.includes('slow done')
                : kind === 'cancelled'
                  ? got.length === 0
                  : got.length === 1 && shown.includes('did not answer within 300 ms');
          if (!ok) wrong.push(`${kind} ${id}: ${shown.slice(0, 200)}`);
        }
        const received = s.received();
        s.close();
        expect(wrong, `fast ${fast}`).toEqual([]);
        const cancelled = [...kinds.values()].filter((k) => k === 'cancelled').length;
        runs.push({
          cancelledUpstream: received.filter((r) => r.name === 'slow:cancelled').length,
          cancelled,
          completed: received.filter((r) => r.completed === true).length,
        });
      }
      const [fast, sdk] = runs;
      expect(fast).toEqual(sdk);
      expect(fast!.cancelledUpstream).toBe(fast!.cancelled);
    });
  },
);
