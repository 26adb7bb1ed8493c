/**
 * atk-pinlock: the pinlock branch's PinStore — drift writes deferred (DRIFT_WRITE_MS, a trailing unref'd timer, the
 * unwritten changes put back over each re-read) and `reading()` (a listing's questions answered from one look at the
 * lock file). What decides a call is the tracker's drift (set at each listing) and the lock file's `tools`: none of
 * these changes may let a definition the file does not pin be taken for pinned. All hold on pinlock (4deb870); each
 * test names the planted bug it fails on (each was planted and seen to fail):
 * - reading()'s `#reading = false` outside a finally: a throwing listing leaves its snapshot for later calls;
 * - reading() answering from its last snapshot when the file cannot be read;
 * - withDriftChanges putting an unwritten drift into `tools`;
 * - flush writing its lock without re-reading the file (an accept undone);
 * - #save rethrowing a write error (the timer's throw uncaught), or a re-read dropping the pins held in memory;
 * - flush writing over a lock file that cannot be read.
 */
import type * as Fs from 'node:fs';
import { mkdtempSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listedUpstream, type ListedUpstream } from '../gateway/listed-upstream.js';

const disk = vi.hoisted(() => ({ fail: false, writes: 0 }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof Fs>();
  const writeFileSync = (...args: Parameters<typeof fs.writeFileSync>): void => {
    if (String(args[0]).endsWith('.tmp')) {
      if (disk.fail) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      disk.writes++;
    }
    fs.writeFileSync(...args);
  };
  return { ...fs, default: { ...fs, writeFileSync }, writeFileSync };
});

const { DRIFT_WRITE_MS, PinStore, PinTracker } = await import('../../src/gateway/pins.js');
const { readLockFile, writeLockFile } = await import('../../src/gateway/lock-file.js');
type ToolOf = Parameters<InstanceType<typeof PinTracker>['isDrifted']>[0];

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  disk.fail = false;
  disk.writes = 0;
});

const def = (name: string, description: string) => ({ name, description, inputSchema: { type: 'object' } });
const tool = (name: string) => ({ name, canonicalName: name }) as ToolOf;

function offer(up: ListedUpstream, description: string, others: readonly string[] = []): void {
  up.tools = new Map([['up:t', def('t', description)], ...others.map((o) => [`up:${o}`, def(o, 'plain')] as const)]);
}

function lockIn(): string {
  return join(mkdtempSync(join(tmpdir(), 'toolgate-atk-pinlock-')), 'policy.lock.json');
}

/** Another process rewrites the file (`toolgate pin --accept`, an editor): its modification time moved on. */
function rewrite(file: string, change: () => void, seconds = 60): void {
  change();
  const later = new Date(Date.now() + seconds * 1000);
  utimesSync(file, later, later);
}

/** `toolgate pin --accept` elsewhere: every drift on disk made the pin. */
function acceptElsewhere(file: string, seconds = 60): void {
  rewrite(
    file,
    () => {
      const lock = readLockFile(file);
      writeLockFile(file, { version: 2, tools: { ...lock.tools, ...lock.drift }, drift: {} });
    },
    seconds,
  );
}

/** A tracker over a fresh lock file with up:t pinned as 'reads', then offered drifted as 'reads, and mails'. */
function drifted(file = lockIn()) {
  const store = new PinStore(file);
  const tracker = new PinTracker(store, () => undefined);
  const up = listedUpstream('up');
  offer(up, 'reads');
  tracker.check(up);
  offer(up, 'reads, and mails');
  tracker.check(up);
  return { file, store, tracker, up };
}

describe('atk-pinlock: reading() never outlives its listing', () => {
  it('a listing that throws leaves no snapshot: a later call decides on the lock file as it is then', () => {
    const { file, store, tracker } = drifted();
    const before = readFileSync(file, 'utf8');
    acceptElsewhere(file); // the drift accepted: the file pins 'reads, and mails'
    // A listing reads the file (its snapshot pins the drifted definition) and fails midway.
    expect(() =>
      store.reading(() => {
        throw new Error('the listing failed');
      }),
    ).toThrow('the listing failed');
    // The operator reverts the accept by hand: the drifted definition is not pinned any more.
    rewrite(file, () => writeFileSync(file, before), 120);
    // Planted bug caught: `#reading = false` not in a finally — the accept's snapshot answers, the drift is cleared
    // and the call runs.
    expect(tracker.isDrifted(tool('up:t'))).toBe(true);
    expect(store.reading(() => tracker.isDrifted(tool('up:t')))).toBe(true);
  });

  it('a listing while the lock file cannot be read keeps the drift (no snapshot of before)', () => {
    const { file, store, tracker } = drifted();
    acceptElsewhere(file);
    expect(store.lock.tools['up:t']!.definition.description).toBe('reads, and mails'); // the store saw the accept
    rewrite(file, () => writeFileSync(file, '{"version": 2, "tools": {'), 120); // then a half-saved edit
    // Planted bug caught: reading() answering from the last good snapshot when the file cannot be read (the catch
    // setting #reading) — the accept it saw clears the drift of a tool the file, broken now, may not pin.
    expect(store.reading(() => tracker.isDrifted(tool('up:t')))).toBe(true);
    expect(tracker.isDrifted(tool('up:t'))).toBe(true);
  });
});

describe('atk-pinlock: unwritten drift changes over a re-read never make a pin', () => {
  it('a drift that changes again in the interval, with an accept of the first in between: the last is refused', () => {
    vi.useFakeTimers();
    const { file, store, tracker, up } = drifted(); // drift 1 written at once
    offer(up, 'reads, and deletes');
    tracker.check(up); // drift 2: pending
    expect(JSON.stringify(readLockFile(file).drift)).not.toContain('deletes');
    acceptElsewhere(file); // accepts drift 1, the one on disk
    expect(tracker.isDrifted(tool('up:t'))).toBe(true); // drift 2 is not what was accepted
    expect(store.lock.drift?.['up:t']?.definition.description).toBe('reads, and deletes'); // put back over the re-read
    vi.advanceTimersByTime(DRIFT_WRITE_MS);
    const lock = readLockFile(file);
    expect(lock.tools['up:t']!.definition.description).toBe('reads, and mails'); // the accept stands
    expect(lock.drift?.['up:t']?.definition.description).toBe('reads, and deletes');
    // Planted bug caught: withDriftChanges putting an unwritten drift into `tools` (or over an accept's pin).
    offer(up, 'reads, and deletes');
    tracker.check(up);
    expect(tracker.isDrifted(tool('up:t'))).toBe(true);
  });

  it('two stores of one file (a reload naming it otherwise) with drifts pending, an accept between: none undone', () => {
    vi.useFakeTimers();
    const { file, tracker, up } = drifted(); // drift 1 written at once
    offer(up, 'reads, and deletes');
    tracker.check(up); // drift 2 pending in the first store
    const other = new PinTracker(new PinStore(join(file, '..', '.', 'policy.lock.json')), () => undefined);
    expect(readLockFile(file).drift?.['up:t']?.definition.description).toBe('reads, and deletes'); // flushed first
    other.check(up); // the same drift: nothing new
    offer(up, 'reads, and wipes');
    other.check(up); // drift 3: the second store's first write, at once
    offer(up, 'reads, and mails it all');
    tracker.check(up); // drift 4: pending in the first store
    acceptElsewhere(file); // accepts drift 3, the one on disk
    vi.advanceTimersByTime(DRIFT_WRITE_MS);
    const lock = readLockFile(file);
    expect(lock.tools['up:t']!.definition.description).toBe('reads, and wipes');
    expect(lock.drift?.['up:t']?.definition.description).toBe('reads, and mails it all');
    // Planted bug caught: a trailing write of the store's lock without re-reading (the accept undone, or drift 4
    // pinned by a merge that takes the memory's `tools`).
    expect(tracker.isDrifted(tool('up:t'))).toBe(true);
    expect(other.isDrifted(tool('up:t'))).toBe(true);
  });
});

describe('atk-pinlock: the trailing write fails closed', () => {
  it('a disk error in the deferred write: no throw from the timer, the pins held, the drift still refused', () => {
    vi.useFakeTimers();
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const { file, store, tracker, up } = drifted();
    offer(up, 'reads, and deletes');
    tracker.check(up); // pending
    disk.fail = true;
    // Planted bug caught: #save rethrowing a write error — the unref'd timer's throw is an uncaught exception.
    expect(() => vi.advanceTimersByTime(DRIFT_WRITE_MS)).not.toThrow();
    expect(warn.mock.calls.some((c) => JSON.stringify(c).includes('TOOLGATE_LOCK_READONLY'))).toBe(true);
    expect(tracker.isDrifted(tool('up:t'))).toBe(true);
    // A tool first seen now is pinned in memory only; the file changed by another process; then it drifts.
    offer(up, 'reads, and deletes', ['fresh']);
    tracker.check(up);
    expect(readLockFile(file).tools['up:fresh']).toBeUndefined(); // not written
    disk.fail = false;
    acceptElsewhere(file); // re-read: the memory-only pin must stay
    up.tools.set('up:fresh', def('fresh', 'plain, and wipes the disk'));
    tracker.check(up);
    expect(store.lock.tools['up:fresh']!.definition.description).toBe('plain');
    expect(tracker.isDrifted(tool('up:fresh'))).toBe(true);
  });

  it('one failed write does not make the store memory-only: the next change writes, the pins held meanwhile with it', () => {
    vi.useFakeTimers();
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const { file, tracker, up } = drifted();
    disk.fail = true; // one ENOSPC
    offer(up, 'reads, and mails', ['fresh']);
    tracker.check(up); // up:fresh first seen: its write fails, pinned in memory only
    expect(readLockFile(file).tools['up:fresh']).toBeUndefined();
    expect(warn.mock.calls.filter((c) => JSON.stringify(c).includes('TOOLGATE_LOCK_READONLY'))).toHaveLength(1);
    disk.fail = false; // space freed
    offer(up, 'reads, and mails', ['fresh', 'second']);
    tracker.check(up); // up:second first seen
    // Planted bug caught (main at c1b7f4b): a store whose write failed once never wrote again — every later pin was
    // memory-only for the process's life, lost at its restart (the next start pins whatever is offered then).
    const lock = readLockFile(file);
    expect(lock.tools['up:second']!.definition.description).toBe('plain');
    expect(lock.tools['up:fresh']!.definition.description).toBe('plain'); // the pin held in memory, written with it
    expect(lock.tools['up:t']!.definition.description).toBe('reads');
    // Failing again warns again (a new streak), and never throws out of a listing.
    disk.fail = true;
    offer(up, 'reads, and mails', ['fresh', 'second', 'third']);
    expect(() => tracker.check(up)).not.toThrow();
    expect(warn.mock.calls.filter((c) => JSON.stringify(c).includes('TOOLGATE_LOCK_READONLY'))).toHaveLength(2);
  });

  it('a lock file broken by hand while a drift is pending: not written over, the drift still refused', () => {
    vi.useFakeTimers();
    const { file, tracker, up } = drifted();
    offer(up, 'reads, and deletes');
    tracker.check(up); // pending
    const broken = '{"version": 2, "tools": {';
    rewrite(file, () => writeFileSync(file, broken));
    disk.writes = 0;
    // Planted bug caught: flush writing its lock when the file cannot be read — an operator's half-edit replaced.
    expect(() => vi.advanceTimersByTime(DRIFT_WRITE_MS)).not.toThrow();
    expect(readFileSync(file, 'utf8')).toBe(broken);
    expect(disk.writes).toBe(0);
    expect(tracker.isDrifted(tool('up:t'))).toBe(true);
  });
});
