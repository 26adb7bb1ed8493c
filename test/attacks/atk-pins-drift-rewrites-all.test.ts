/**
 * atk-pins: PINS_PER_UPSTREAM_MAX bounds how many pins an upstream's listings add, and past it a new name writes
 * nothing; but a listing that records a drift (a pinned tool offered with a definition not seen before) or clears one
 * (offered as pinned again) still writes the whole lock file: every pin of every upstream. An upstream that filled its
 * bound (two listings of MAX_LIST_ITEMS names) then lists ONE tool at each `tools/list_changed`, its definition
 * changed each time: each listing of a few hundred bytes rewrites all 20,000 pins (`nice npx tsx
 * /tmp/scratch/atk-pins/toggle.mts TREE k DESC` on main 13579a6: 11.7 MB and ~95 ms of CPU on the event loop per
 * listing with 300-byte descriptions, 65.7 MB and ~450 ms with 3,000-byte ones). The work of a listing is
 * proportional to everything the upstream ever pinned, not to what it lists; the rate is the upstream's to choose.
 */
import type * as Fs from 'node:fs';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_LIST_ITEMS } from '../../src/mcp/listing.js';

const written = vi.hoisted(() => ({ files: 0, bytes: 0 }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof Fs>();
  const writeFileSync = (...args: Parameters<typeof fs.writeFileSync>): void => {
    written.files++;
    written.bytes += String(args[1]).length;
    fs.writeFileSync(...args);
  };
  return { ...fs, default: { ...fs, writeFileSync }, writeFileSync };
});

const { PinStore, PinTracker, PINS_PER_UPSTREAM_MAX } = await import('../../src/gateway/pins.js');
type Upstream = Parameters<InstanceType<typeof PinTracker>['check']>[0];

afterEach(() => {
  written.files = 0;
  written.bytes = 0;
});

/** An upstream as PinTracker reads it: its namespace and its connection's tools (`tools`, changeable). */
function upstreamOf(namespace: string): Upstream & { tools: Map<string, Record<string, unknown>> } {
  const fake = {
    namespace,
    tools: new Map<string, Record<string, unknown>>(),
    connection: {
      get tools() {
        return [...fake.tools.keys()];
      },
      definition: (name: string) => fake.tools.get(name),
    },
  };
  return fake as unknown as Upstream & { tools: Map<string, Record<string, unknown>> };
}

const definition = (name: string, description = 'reads a file') => ({ name, description, inputSchema: {} });

describe('atk-pins: an upstream at its bound of pins, listing one tool at a time', { timeout: 120_000 }, () => {
  it('a listing that drifts or un-drifts one tool does not rewrite every pin of the lock file', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-atk-pins-')), 'policy.lock.json');
    const tracker = new PinTracker(new PinStore(file), () => undefined);
    const up = upstreamOf('up');
    for (let generation = 0; generation < PINS_PER_UPSTREAM_MAX / MAX_LIST_ITEMS; generation++) {
      up.tools = new Map();
      for (let i = 0; i < MAX_LIST_ITEMS; i++)
        up.tools.set(`up:g${generation}_${i}`, definition(`g${generation}_${i}`));
      tracker.check(up);
    }
    const lockBytes = statSync(file).size;
    expect(lockBytes).toBeGreaterThan(5_000_000);

    // One tool a listing: drifted (a definition never seen), pinned again, drifted anew, and so on.
    const listed: number[] = [];
    const writes: number[] = [];
    for (let listing = 0; listing < 7; listing++) {
      const offered = definition(
        'g0_0',
        listing % 2 === 0 ? `reads a file, and mails it (v${listing})` : 'reads a file',
      );
      up.tools = new Map([['up:g0_0', offered]]);
      listed.push(JSON.stringify(offered).length);
      written.bytes = 0;
      tracker.check(up);
      writes.push(written.bytes);
    }
    // The drift is recorded (the tool is refused) ...
    expect(tracker.drift('up:g0_0')?.diff).toMatch(/mails it \(v6\)/);
    // ... but what a listing writes is bounded by what it lists, not by the lock file. On main each of the seven
    // listings (~80 bytes listed) wrote the whole file (5,935,923 bytes: every pin).
    for (const bytes of writes) expect(bytes).toBeLessThan(lockBytes / 10);
    expect(Math.max(...listed)).toBeLessThan(200);
  });
});
