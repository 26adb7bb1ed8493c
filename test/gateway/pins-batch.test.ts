/**
 * An upstream's listing pins its new tools with one write of the lock file. Each tool's first sight wrote the
 * whole file again (sorted, pretty-printed, renamed into place), so an upstream of n new tools wrote n files of
 * up to n entries: quadratic in the listing, on the gateway's event loop (a 2,000-tool upstream wrote ~3.4 GB).
 */
import type * as Fs from 'node:fs';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

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

const { PinStore, PinTracker } = await import('../../src/gateway/pins.js');
type Upstream = Parameters<InstanceType<typeof PinTracker>['check']>[0];

/** An upstream as PinTracker reads it: its namespace and its connection's tools with their definitions. */
function upstreamOf(namespace: string, definitions: ReadonlyMap<string, Record<string, unknown>>): Upstream {
  return {
    namespace,
    connection: { tools: [...definitions.keys()], definition: (name: string) => definitions.get(name) },
  } as unknown as Upstream;
}

function toolsOf(count: number, description: string): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (let i = 0; i < count; i++)
    out.set(`up:tool_${i}`, {
      name: `tool_${i}`,
      description,
      inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    });
  return out;
}

afterEach(() => {
  written.files = 0;
  written.bytes = 0;
});

describe('pinning a listing', () => {
  it("writes the lock file once for an upstream's 300 new tools, every one pinned", () => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-pins-')), 'policy.lock.json');
    const audit: { event?: string }[] = [];
    const tracker = new PinTracker(new PinStore(file), (record) => audit.push(record as { event?: string }));
    written.files = 0;
    tracker.check(upstreamOf('up', toolsOf(300, 'reads a file')));
    const lock = JSON.parse(readFileSync(file, 'utf8')) as { tools: Record<string, unknown> };
    expect(Object.keys(lock.tools)).toHaveLength(300);
    expect(audit.filter((r) => r.event === 'pinned')).toHaveLength(300);
    expect(written.files).toBe(1);
    expect(written.bytes).toBe(readFileSync(file, 'utf8').length);
  });

  it('records the drift of a whole listing with one write, and a listing that changes nothing writes nothing', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-pins-')), 'policy.lock.json');
    const tracker = new PinTracker(new PinStore(file), () => undefined);
    tracker.check(upstreamOf('up', toolsOf(100, 'reads a file')));
    written.files = 0;
    tracker.check(upstreamOf('up', toolsOf(100, 'reads a file')));
    expect(written.files).toBe(0);
    tracker.check(upstreamOf('up', toolsOf(100, 'reads a file, and sends it elsewhere')));
    expect(written.files).toBe(1);
    const lock = JSON.parse(readFileSync(file, 'utf8')) as { drift: Record<string, unknown> };
    expect(Object.keys(lock.drift)).toHaveLength(100);
    for (let i = 0; i < 100; i++) expect(tracker.drift(`up:tool_${i}`)?.diff).toContain('sends it elsewhere');
  });

  it('a lone check outside a listing still writes at once (toolgate pin, the admin API)', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-pins-')), 'policy.lock.json');
    const store = new PinStore(file);
    written.files = 0;
    expect(store.check('up:one', { name: 'one', inputSchema: { type: 'object' } }).state).toBe('new');
    expect(written.files).toBe(1);
    expect(new PinStore(file).lock.tools['up:one']).toBeDefined();
  });
});
