/**
 * A tool left unpinned because its upstream holds PINS_PER_UPSTREAM_MAX pins is refused by the gateway, but
 * `toolgate pin` exited 0 and named nothing: the tracker only emitted a process warning (TOOLGATE_PINS_FULL), no
 * audit record, so the command never learnt of it. Now a `pin` record of event `unpinned` (once while the tool stays
 * listed unpinned) tells it: it names the tools and why, and exits 1.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/program.js';
import { hashOf } from '../../src/crypto.js';
import type { GatewayAuditRecord } from '../../src/gateway/audit.js';
import { PinStore, PinTracker, PINS_PER_UPSTREAM_MAX } from '../../src/gateway/pins.js';
import { DOCS, stdioUpstream, tempDir, writePolicy } from '../harness.js';

type Upstream = Parameters<InstanceType<typeof PinTracker>['check']>[0];

/** A lock file whose upstream `namespace` holds the bound of pins, of names it no longer lists. */
function fullLock(file: string, namespace: string): void {
  const tools: Record<string, unknown> = {};
  for (let i = 0; i < PINS_PER_UPSTREAM_MAX; i++) {
    const definition = { name: `old_${i}`, inputSchema: { type: 'object' } };
    tools[`${namespace}:old_${i}`] = {
      sha256: hashOf(definition),
      definition,
      at: '2026-12-01T00:00:00.000Z',
      upstream: namespace,
    };
  }
  writeFileSync(file, JSON.stringify({ version: 2, tools }));
}

async function cli(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a tool left unpinned by the bound of pins', { timeout: 60_000 }, () => {
  it('is one `unpinned` audit record while it stays listed so, not one a listing', () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const file = join(tempDir('pin-unpinned'), 'policy.lock.json');
    fullLock(file, 'up');
    const records: GatewayAuditRecord[] = [];
    const tracker = new PinTracker(new PinStore(file), (record) => records.push(record));
    const tools = new Map([['up:fresh', { name: 'fresh', inputSchema: {} }]]);
    const up = { namespace: 'up', connection: { tools: [...tools.keys()], definition: (n: string) => tools.get(n) } };
    for (let listing = 0; listing < 3; listing++) tracker.check(up as unknown as Upstream);
    expect(records).toEqual([
      expect.objectContaining({ type: 'pin', event: 'unpinned', upstream: 'up', tool: 'up:fresh' }),
    ]);
    expect((records[0] as { reason?: string }).reason).toMatch(/holds 20,000 pins .*PINS_PER_UPSTREAM_MAX/);
  });

  it('makes `toolgate pin` exit 1 naming it and why (text and --json)', async () => {
    const d = tempDir('pin-unpinned');
    const policy = writePolicy(d, { gateway: { upstreams: { docs: stdioUpstream(DOCS) } } });
    fullLock(join(d, 'policy.lock.json'), 'docs');
    const json = await cli(['pin', '--policy', policy, '--json']);
    // On main: exit 0, nothing said.
    expect(json.code).toBe(1);
    const out = JSON.parse(json.stdout) as { unpinned: { tool: string; upstream: string; reason: string }[] };
    expect(out.unpinned.map((u) => u.tool)).toContain('docs:echo');
    expect(out.unpinned[0]).toMatchObject({ upstream: 'docs', reason: expect.stringMatching(/PINS_PER_UPSTREAM_MAX/) });
    const text = await cli(['pin', '--policy', policy]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/unpinned .*docs:echo/);
    expect(text.stdout).toContain('upstream "docs" holds 20,000 pins');
  });
});
