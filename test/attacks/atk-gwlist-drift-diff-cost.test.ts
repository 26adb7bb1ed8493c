/**
 * atk-gwlist: a drifted tool's diff is computed on the gateway's event loop at every listing, unbounded. PinStore.check
 * calls definitionDiff (jsdiff's createPatch on the pretty-printed definitions, Myers' O((N+M)·D) with no
 * maxEditLength) for a drifted tool each time its upstream lists, also when the drift is the one already recorded
 * (same sha256). An upstream that pins a tool with a `_meta` of n distinct lines (not compiled, not bounded: 4,000
 * lines is a 35 KB definition) and then offers another n lines costs ~n² line comparisons per drifted tool per
 * `tools/list_changed`, which it may send as often as it likes: 4,000 lines, 3.1 s of CPU a listing; 2,000, 0.95 s
 * (npx tsx /tmp/scratch/diff.mts N). The drift must still be recorded (refused); the work counted here is jsdiff's
 * line comparisons (a counting comparator handed to createPatch).
 */
import type * as Diff from 'diff';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { diffWork } from './fixtures/count-diff.js';

vi.mock('diff', async (importOriginal) =>
  (await import('./fixtures/count-diff.js')).countingDiff(await importOriginal<typeof Diff>()),
);

const { PinStore, PinTracker } = await import('../../src/gateway/pins.js');
type Upstream = Parameters<InstanceType<typeof PinTracker>['check']>[0];

function upstreamOf(definition: Record<string, unknown>): Upstream {
  return {
    namespace: 'up',
    connection: { tools: ['up:t'], definition: (name: string) => (name === 'up:t' ? definition : undefined) },
  } as unknown as Upstream;
}

/** A tool whose `_meta` holds `lines` distinct strings (one line each once pretty-printed), told apart by `k`. */
function definitionOf(k: number, lines: number): Record<string, unknown> {
  return {
    name: 't',
    description: 'reads a file',
    inputSchema: { type: 'object' },
    _meta: { v: Array.from({ length: lines }, (_, i) => `${k}-${i}`) },
  };
}

describe('atk-gwlist: the diff of a drifted tool', () => {
  it('costs bounded work over three listings of one drift of 2,000 lines (and the drift is still refused)', () => {
    const lines = 2_000;
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-atk-gwlist-')), 'policy.lock.json');
    const tracker = new PinTracker(new PinStore(file), () => undefined);
    tracker.check(upstreamOf(definitionOf(1, lines))); // pinned at first sight
    expect(diffWork.patches).toBe(0);
    // The rug pull, then two more `tools/list_changed` with nothing changed.
    for (let listing = 0; listing < 3; listing++) tracker.check(upstreamOf(definitionOf(2, lines)));
    expect(tracker.drift('up:t')?.diff).toContain('2-0');
    // Linear in the definitions' size would be a few times 2,000 comparisons a listing; on main each of the three
    // listings diffs again (3 patches) at ~4.0 million comparisons each (12,095,886 in all).
    expect(diffWork.patches).toBeGreaterThan(0);
    expect(diffWork.comparisons).toBeGreaterThan(0);
    expect(diffWork.comparisons).toBeLessThanOrEqual(100 * lines);
  });
});
