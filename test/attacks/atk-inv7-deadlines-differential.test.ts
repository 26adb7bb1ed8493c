/**
 * inv7's turn lists (src/deadlines.ts) against the structure before them (fixtures/deadlines-before-inv7.ts, 0b0ab6b^1)
 * on random sequences under fake timers: deadlines of several lengths added (a burst past the 1,024-call bound at
 * times), removed first, last, in the middle or all, turns closed by a tick, time advanced; from inside the expiry
 * callback (as an abort listener would) deadlines are added and removed again while the turn they opened is open.
 * Both must expire the same deadlines at the same (fake) times and hold the same number queued after each step. The
 * order in which one timer pass expires deadlines of different lengths follows the queues' Map order in both, which
 * inv7 changed (it keeps empty queues while an open turn holds deadlines): compared as a set per instant.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Deadlines, type Timed } from '../../src/deadlines.js';
import { Deadlines as Before } from './fixtures/deadlines-before-inv7.js';

interface Node extends Timed<Node> {
  readonly label: number;
}

const node = (label: number): Node => ({ label, turn: null, queue: null, prev: null, next: null, queued: false });
const realNextTick = process.nextTick;
const tick = (): Promise<void> => new Promise((resolve) => realNextTick(resolve));
const LENGTHS = [5, 10, 25, 60];

function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

interface Side {
  readonly deadlines: Deadlines<Node>;
  readonly live: Node[];
  readonly log: string[];
  label: number;
}

function side(kind: typeof Deadlines): Side {
  const log: string[] = [];
  const live: Node[] = [];
  const deadlines: Deadlines<Node> = new kind<Node>((n, ms) => {
    deadlines.remove(n);
    log.push(`x${n.label}/${ms}@${Date.now()}`);
    const at = live.indexOf(n);
    if (at >= 0) live.splice(at, 1);
    // A call started from the callback, one started and settled at once, one settled unless the label is odd.
    if (n.label % 3 === 0) {
      const m = node(100_000 + n.label);
      live.push(m);
      deadlines.add(m, LENGTHS[n.label % 4]!);
    }
    if (n.label % 5 === 0) {
      const quick = node(200_000 + n.label);
      deadlines.add(quick, 10);
      const m = node(300_000 + n.label);
      live.push(m);
      deadlines.add(m, 25);
      deadlines.remove(quick);
      if (n.label % 2 === 0) {
        live.splice(live.indexOf(m), 1);
        deadlines.remove(m);
      }
    }
  });
  return { deadlines, live, log, label: 0 };
}

/** Each instant's expiries as a set (sorted within a run of the same time). */
function normal(log: readonly string[]): string[] {
  const out: string[] = [];
  let group: string[] = [];
  let at = '';
  for (const entry of log) {
    const time = entry.includes('@') ? entry.split('@')[1]! : '';
    if (time !== at) {
      out.push(...group.sort());
      group = [];
      at = time;
    }
    group.push(entry);
  }
  out.push(...group.sort());
  return out;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('inv7 deadlines against the structure before', () => {
  for (let seed = 1; seed <= 80; seed++) {
    it(`seed ${seed}: the same deadlines expire at the same times`, async () => {
      vi.useFakeTimers();
      const sides = [side(Before as unknown as typeof Deadlines), side(Deadlines)];
      const r = random(seed);
      for (let step = 0; step < 200; step++) {
        const op = r();
        const arg = r();
        const arg2 = r();
        for (const s of sides) {
          if (op < 0.4) {
            const count = arg < 0.05 ? 1100 : 1 + Math.floor(arg * 5);
            for (let c = 0; c < count; c++) {
              const n = node(++s.label);
              s.live.push(n);
              s.deadlines.add(n, LENGTHS[(s.label + Math.floor(arg2 * 4)) % 4]!);
            }
          } else if (op < 0.65) {
            s.live.sort((a, b) => a.label - b.label);
            if (s.live.length > 0) {
              const at = arg < 0.33 ? 0 : arg < 0.66 ? s.live.length - 1 : Math.floor(arg2 * s.live.length);
              const [gone] = s.live.splice(at, 1);
              s.deadlines.remove(gone!);
              s.log.push(`r${gone!.label}`);
            }
          } else if (op < 0.7) {
            for (const gone of s.live.splice(0)) s.deadlines.remove(gone);
            s.log.push('all');
          }
        }
        if (op >= 0.7 && op < 0.85) await tick();
        else if (op >= 0.85) await vi.advanceTimersByTimeAsync(Math.floor(arg * 30));
        for (const s of sides) s.log.push(`size ${s.deadlines.size}`);
      }
      await tick();
      await vi.advanceTimersByTimeAsync(200);
      expect(normal(sides[1]!.log)).toEqual(normal(sides[0]!.log));
      expect(sides[1]!.deadlines.size).toBe(sides[0]!.deadlines.size);
    });
  }
});
