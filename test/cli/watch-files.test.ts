import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchFiles } from '../../src/cli/watch-files.js';
import { emptyLock, writeLockFile, writtenHere } from '../../src/gateway/lock-file.js';

/** Resolves once `count` changes were reported, or fails after `ms`. */
function changes(): { count: () => number; reached: (n: number, ms?: number) => Promise<void>; changed: () => void } {
  let n = 0;
  return {
    count: () => n,
    changed: () => void n++,
    reached: async (target, ms = 5_000) => {
      const until = Date.now() + ms;
      while (n < target) {
        if (Date.now() > until) throw new Error(`${target} changes expected, saw ${n}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
  };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the gateway watches its policy and lock files (cli/watch-files.ts)', () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });

  it('sees in-place writes, saves by renaming, a delete and re-create, and a lock file that appears later', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-watchfiles-'));
    const policy = join(dir, 'policy.yaml');
    const lock = join(dir, 'policy.lock.json');
    writeFileSync(policy, 'a');
    const seen = changes();
    const logs: string[] = [];
    const watcher = watchFiles(policy, lock, seen.changed, (t) => logs.push(t));
    closers.push(() => watcher.close());

    writeFileSync(policy, 'b');
    await seen.reached(1);
    writeFileSync(join(dir, 'policy.yaml.tmp'), 'c');
    renameSync(join(dir, 'policy.yaml.tmp'), policy);
    await seen.reached(2);
    // The replaced file is watched under its path again: a later in-place write is seen.
    await pause(150);
    writeFileSync(policy, 'd');
    await seen.reached(3);
    rmSync(policy);
    await seen.reached(4);
    await pause(150);
    writeFileSync(policy, 'e');
    await seen.reached(5);
    await pause(150);
    writeFileSync(lock, '{}');
    await seen.reached(6);
    await pause(150);
    writeFileSync(lock, '{"a":1}');
    await seen.reached(7);
    expect(logs).toEqual([]);
  });

  it('is not woken by writes to another file of the directory (the audit file beside the policy)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-watchfiles-'));
    const policy = join(dir, 'policy.yaml');
    const lock = join(dir, 'policy.lock.json');
    writeFileSync(policy, 'a');
    writeFileSync(lock, '{}');
    const seen = changes();
    const watcher = watchFiles(policy, lock, seen.changed, () => undefined);
    closers.push(() => watcher.close());
    for (let i = 0; i < 20; i++) appendFileSync(join(dir, 'audit.jsonl'), `${i}\n`);
    await pause(300);
    expect(seen.count()).toBe(0);
    writeFileSync(policy, 'b');
    await seen.reached(1);
  });

  it("is not woken by the gateway's own writes of its lock file; an operator's write after them is a change", async () => {
    // atk-pins: each write of the lock file by a listing (a pin, a drift recorded or cleared) reloaded the gateway,
    // which read the whole file again and re-checked every upstream.
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-watchfiles-'));
    const policy = join(dir, 'policy.yaml');
    const lock = join(dir, 'policy.lock.json');
    writeFileSync(policy, 'a');
    writeLockFile(lock, emptyLock());
    const seen = changes();
    const watcher = watchFiles(policy, lock, seen.changed, () => undefined, writtenHere);
    closers.push(() => watcher.close());
    for (let i = 0; i < 3; i++) {
      writeLockFile(lock, emptyLock()); // a new file renamed over the old one: its watch fires
      await pause(150);
    }
    expect(writtenHere(lock)).toBe(true);
    expect(seen.count()).toBe(0);
    // The operator's edit, in place (same inode): a change, and the file is no longer as the gateway left it.
    appendFileSync(lock, ' ');
    await seen.reached(1);
    expect(writtenHere(lock)).toBe(false);
    // Without the filter (another process's watch), the same own writes are changes.
    const other = changes();
    const plain = watchFiles(policy, lock, other.changed, () => undefined);
    closers.push(() => plain.close());
    writeLockFile(lock, emptyLock());
    await other.reached(1);
  });

  it('stops reporting once closed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-watchfiles-'));
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, 'a');
    const seen = changes();
    const watcher = watchFiles(policy, null, seen.changed, () => undefined);
    watcher.close();
    writeFileSync(policy, 'b');
    await pause(300);
    expect(seen.count()).toBe(0);
  });
});
