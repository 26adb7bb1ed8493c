/**
 * atk-pinlock: `toolgate gateway` reloads when its lock file changes, and a reload re-checks every upstream's tools
 * against the file (PinTracker.check): that is how an operator's hand edit — `git checkout policy.lock.json` to undo
 * an accept — makes a tool drifted again (the tracker re-decides a tool at a listing only). The watch ignores the
 * gateway's own writes (writtenHere: the file is as this process left it). The trailing drift write (DRIFT_WRITE_MS)
 * is a write at any moment, outside any listing, of the file merged with what it is then: when it lands between an
 * operator's write and the delivery of its watch event, the file is "as this process left it", the event is dropped,
 * no reload runs, and the undone accept's definition keeps running until the upstream's next listing — which the
 * upstream chooses.
 */
import { mkdtempSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchFiles } from '../../src/cli/watch-files.js';
import { readLockFile, writeLockFile, writtenHere } from '../../src/gateway/lock-file.js';
import { PinStore, PinTracker } from '../../src/gateway/pins.js';
import { listedUpstream, type ListedUpstream } from '../gateway/listed-upstream.js';

type ToolOf = Parameters<InstanceType<typeof PinTracker>['isDrifted']>[0];

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

const def = (name: string, description: string) => ({ name, description, inputSchema: { type: 'object' } });
const tool = (name: string) => ({ name, canonicalName: name }) as ToolOf;

function offer(up: ListedUpstream, t: string, x: string): void {
  up.tools = new Map([
    ['up:t', def('t', t)],
    ['up:x', def('x', x)],
  ]);
}

/** Another process writes the file; its modification time moved on. */
function elsewhere(file: string, write: () => void, seconds: number): void {
  write();
  const later = new Date(Date.now() + seconds * 1000);
  utimesSync(file, later, later);
}

describe('atk-pinlock: an operator edit merged by the trailing drift write', () => {
  it('still wakes the watch (its reload re-checks the pins): an undone accept is refused again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-atk-pinlock-'));
    const policy = join(dir, 'policy.yaml');
    const file = join(dir, 'policy.lock.json');
    writeFileSync(policy, 'rules: []\n');
    const tracker = new PinTracker(new PinStore(file), () => undefined);
    const up = listedUpstream('up');
    offer(up, 'reads', 'plain');
    tracker.check(up); // both pinned
    const original = readFileSync(file, 'utf8');
    offer(up, 'reads, and mails', 'plain');
    tracker.check(up); // t drifted: written at once (the first drift write)
    // The operator accepts t's drift; the gateway sees it at its next call.
    elsewhere(
      file,
      () => writeLockFile(file, { version: 2, tools: { ...readLockFile(file).tools, ...readLockFile(file).drift } }),
      60,
    );
    expect(tracker.isDrifted(tool('up:t'))).toBe(false);
    // The upstream lists again (x toggled): a drift change within DRIFT_WRITE_MS, its write pending.
    offer(up, 'reads, and mails', 'plain, and wipes');
    tracker.check(up);
    let reloads = 0;
    const watcher = watchFiles(
      policy,
      file,
      () => void reloads++,
      () => undefined,
      writtenHere,
    );
    closers.push(() => watcher.close());
    // The operator undoes the accept (`git checkout policy.lock.json`); the trailing write fires before the watch
    // event is delivered (here: in the same turn; in a gateway: any time before its poll phase).
    elsewhere(file, () => writeFileSync(file, original), 120);
    tracker.store.flush();
    expect(readLockFile(file).tools['up:t']!.definition.description).toBe('reads'); // the undo merged, not undone
    // What decides t until a re-check: the tracker cleared its drift at the accept.
    expect(tracker.isDrifted(tool('up:t'))).toBe(false);
    // The watch must report the change, so that the reload re-checks. On pinlock: never (the event is dropped).
    await expect.poll(() => reloads, { timeout: 3_000 }).toBeGreaterThan(0);
    tracker.check(up); // what the reload does
    expect(tracker.isDrifted(tool('up:t'))).toBe(true);
  });
});
