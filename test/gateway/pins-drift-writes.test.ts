/**
 * A listing whose only change is a drift recorded or cleared wrote the whole lock file: an upstream at its bound of
 * pins toggling one tool between its pin and a drift at each `tools/list_changed` made each listing rewrite every pin
 * (11.7 MB a listing with 300-byte descriptions, atk-pins). Now drift-only changes are written at most once per
 * DRIFT_WRITE_MS a store (the first at once, the rest coalesced into one trailing write merged with the file as it is
 * then), new pins still at once, and a pending write is flushed when the gateway closes.
 */
import type * as Fs from 'node:fs';
import { mkdtempSync, readFileSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanupsAfterEach, gatewayOn, inMemoryClient, inMemoryUpstream, tempDir, writePolicy } from '../harness.js';
import { listedUpstream, type ListedUpstream } from './listed-upstream.js';

const written = vi.hoisted(() => ({ files: 0 }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof Fs>();
  const writeFileSync = (...args: Parameters<typeof fs.writeFileSync>): void => {
    if (String(args[0]).endsWith('.tmp')) written.files++;
    fs.writeFileSync(...args);
  };
  return { ...fs, default: { ...fs, writeFileSync }, writeFileSync };
});

const pins = await import('../../src/gateway/pins.js');
const { PinStore, PinTracker } = pins;
const { writeLockFile, readLockFile } = await import('../../src/gateway/lock-file.js');

const cleanups = cleanupsAfterEach();
/** DRIFT_WRITE_MS (undefined on main, where nothing is coalesced). */
const INTERVAL = (pins as { DRIFT_WRITE_MS?: number }).DRIFT_WRITE_MS ?? 5_000;

const def = (name: string, description: string) => ({ name, description, inputSchema: { type: 'object' } });

/** The upstream's three tools, `tool_0` offered as pinned (`version` 0) or changed. */
function offer(up: ListedUpstream, version: number, other = 0): void {
  up.tools = new Map([
    ['up:tool_0', def('tool_0', version === 0 ? 'reads a file' : `reads a file, and mails it (${version})`)],
    ['up:tool_1', def('tool_1', other === 0 ? 'lists a folder' : `lists a folder, and mails it (${other})`)],
    ['up:tool_2', def('tool_2', 'stats a file')],
  ]);
}

const onDisk = (file: string) =>
  JSON.parse(readFileSync(file, 'utf8')) as {
    tools: Record<string, { sha256: string }>;
    drift?: Record<string, { sha256: string }>;
  };

/** Another process's `toolgate pin --accept` of every drift: the file rewritten, its modification time moved. */
function acceptElsewhere(file: string): void {
  const lock = readLockFile(file);
  writeLockFile(file, { version: 2, tools: { ...lock.tools, ...lock.drift }, drift: {} });
  const later = new Date(Date.now() + 60_000);
  utimesSync(file, later, later);
}

afterEach(() => {
  vi.useRealTimers();
  written.files = 0;
});

describe('drift-only listings write the lock file at most once per DRIFT_WRITE_MS', () => {
  it('100 listings toggling a tool between its pin and a drift: 2 writes, not 100; decisions never wait', () => {
    vi.useFakeTimers();
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-drift-')), 'policy.lock.json');
    const tracker = new PinTracker(new PinStore(file), () => undefined);
    const up = listedUpstream('up');
    offer(up, 0);
    tracker.check(up);
    expect(written.files).toBe(1); // new pins: at once
    written.files = 0;
    const tool = { name: 'up:tool_0', canonicalName: 'up:tool_0' } as Parameters<typeof tracker.isDrifted>[0];
    for (let listing = 1; listing <= 100; listing++) {
      offer(up, listing % 2);
      tracker.check(up);
      // What the gateway decides on is the listing's, at once.
      expect(tracker.isDrifted(tool)).toBe(listing % 2 === 1);
    }
    // On main: 100 writes of the whole file. Now the first at once, the rest pending.
    expect(written.files).toBe(1);
    expect(onDisk(file).drift?.['up:tool_0']).toBeDefined(); // the first drift, written at once
    vi.advanceTimersByTime(INTERVAL);
    expect(written.files).toBe(2); // one trailing write: the last listing's state (back to its pin)
    expect(onDisk(file).drift?.['up:tool_0']).toBeUndefined();
    // 100 more over ten intervals: about one write an interval.
    written.files = 0;
    for (let listing = 1; listing <= 100; listing++) {
      offer(up, listing);
      tracker.check(up);
      vi.advanceTimersByTime(INTERVAL / 10);
    }
    vi.advanceTimersByTime(INTERVAL);
    expect(written.files).toBeGreaterThanOrEqual(10);
    expect(written.files).toBeLessThanOrEqual(12);
    expect(onDisk(file).drift?.['up:tool_0']?.sha256).toBe(
      new PinStore(file).lock.drift?.['up:tool_0']?.sha256, // as the file says
    );
    expect(readFileSync(file, 'utf8')).toContain('mails it (100)');
  });

  it('a new pin still writes at once, with the drift pending then', () => {
    vi.useFakeTimers();
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-drift-')), 'policy.lock.json');
    const tracker = new PinTracker(new PinStore(file), () => undefined);
    const up = listedUpstream('up');
    offer(up, 0);
    tracker.check(up);
    offer(up, 1);
    tracker.check(up);
    offer(up, 2);
    tracker.check(up); // pending
    written.files = 0;
    up.tools.set('up:tool_3', def('tool_3', 'new'));
    tracker.check(up);
    expect(written.files).toBe(1);
    const lock = onDisk(file);
    expect(lock.tools['up:tool_3']).toBeDefined();
    expect(readFileSync(file, 'utf8')).toContain('mails it (2)');
    vi.advanceTimersByTime(INTERVAL);
    expect(written.files).toBe(1); // nothing left pending
  });

  it("the trailing write merges with the file: another process's accept in between is neither lost nor undone", () => {
    vi.useFakeTimers();
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-drift-')), 'policy.lock.json');
    const tracker = new PinTracker(new PinStore(file), () => undefined);
    const up = listedUpstream('up');
    offer(up, 0);
    tracker.check(up);
    offer(up, 1);
    tracker.check(up); // tool_0's drift: written at once
    offer(up, 0);
    tracker.check(up); // cleared: pending
    offer(up, 1, 1);
    tracker.check(up); // tool_0 drifted again, tool_1 drifted: pending
    expect(onDisk(file).drift?.['up:tool_1']).toBeUndefined();
    // `toolgate pin --accept` elsewhere: the file's drift (tool_0's first) accepted.
    acceptElsewhere(file);
    const accepted = onDisk(file).tools['up:tool_0']!.sha256;
    vi.advanceTimersByTime(INTERVAL);
    const lock = onDisk(file);
    expect(lock.tools['up:tool_0']!.sha256).toBe(accepted); // not undone
    expect(lock.drift?.['up:tool_0']).toBeUndefined(); // tool_0 as offered now is what was accepted
    expect(lock.drift?.['up:tool_1']).toBeDefined(); // the pending drift is not lost
    // What the gateway decides on follows the file: tool_0 accepted runs, tool_1 stays drifted.
    const tool = (name: string) => ({ name, canonicalName: name }) as Parameters<typeof tracker.isDrifted>[0];
    expect(tracker.isDrifted(tool('up:tool_0'))).toBe(false);
    expect(tracker.isDrifted(tool('up:tool_1'))).toBe(true);
  });

  it('another PinStore of the file in this process (the admin API) sees a pending drift', () => {
    vi.useFakeTimers();
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-drift-')), 'policy.lock.json');
    const tracker = new PinTracker(new PinStore(file), () => undefined);
    const up = listedUpstream('up');
    offer(up, 0);
    tracker.check(up);
    offer(up, 1);
    tracker.check(up);
    offer(up, 1, 1);
    tracker.check(up); // tool_1's drift pending
    expect(new PinStore(file).lock.drift?.['up:tool_1']).toBeDefined();
  });
});

describe('a pending drift write through a gateway', { timeout: 60_000 }, () => {
  it('is flushed when the gateway closes', async () => {
    const state = { version: 0, listings: 0 };
    let upstream: Server | undefined;
    const make = (): Server => {
      const server = new Server({ name: 'up', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
      server.setRequestHandler(ListToolsRequestSchema, () => {
        state.listings++;
        return { tools: [def('echo', state.version === 0 ? 'echoes' : `echoes, and mails it (${state.version})`)] };
      });
      server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: 'ran' }] }));
      upstream = server;
      return server;
    };
    const dir = tempDir('drift-writes');
    const lockFile = join(dir, 'policy.lock.json');
    const policy = writePolicy(dir, { rules: [{ name: 'all', result: 'allow' }] });
    const { gateway } = await gatewayOn(cleanups, policy, () => ({
      pins: { file: lockFile },
      upstreams: {
        up: inMemoryUpstream(make),
      },
    }));
    const client = await inMemoryClient(cleanups, gateway);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['up:echo']);
    for (let version = 1; version <= 3; version++) {
      state.version = version;
      await upstream!.sendToolListChanged();
      await expect.poll(() => state.listings, { timeout: 30_000 }).toBe(1 + version);
      await expect.poll(async () => (await client.listTools()).tools.length, { timeout: 30_000 }).toBe(0);
    }
    await gateway.close();
    expect(readFileSync(lockFile, 'utf8')).toContain('mails it (3)');
  });
});
