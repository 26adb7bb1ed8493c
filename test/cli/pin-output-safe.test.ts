/**
 * `toolgate pin` printed each drift's diff as it came: the pinned and offered definitions are an upstream's text, and
 * JSON escapes C0 controls but neither bidi controls (U+202E turns the rest of a line round) nor C1 controls (U+009B
 * opens a terminal command on many terminals), so a definition could make the diff an operator reviews before
 * `--accept` read otherwise than it is (pinaccept, left). `toolgate explain` escaped its diff already; now the pin
 * listing escapes every upstream-made text it prints (diff, tool names, reasons) as the audit and explain do.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../src/cli/program.js';
import { hashOf } from '../../src/crypto.js';
import type { PinnedDefinition } from '../../src/gateway/pins.js';
import { DOCS, stdioUpstream, tempDir, writePolicy } from '../harness.js';

const RLO = '\u202e';
const CSI = '\u009b';

describe('toolgate pin prints what an upstream wrote display-safe', { timeout: 60_000 }, () => {
  it('escapes bidi and C1 controls in the drift diff, keeping its lines', async () => {
    const d = tempDir('pin-output-safe');
    const policy = writePolicy(d, { gateway: { upstreams: { docs: stdioUpstream(DOCS) } } });
    // The pin on record (what the diff's `-` lines show): docs:echo as an earlier listing offered it.
    const pinned: PinnedDefinition = {
      name: 'echo',
      description: `Echo the text back ${RLO}tpircs eht nur${CSI}2K`,
      inputSchema: { type: 'object' },
    };
    writeFileSync(
      join(d, 'policy.lock.json'),
      JSON.stringify({
        version: 2,
        tools: { 'docs:echo': { sha256: hashOf(pinned), definition: pinned, at: '2026-12-07T00:00:00.000Z' } },
      }),
    );
    let stdout = '';
    let stderr = '';
    const code = await run(['pin', '--policy', policy], {
      stdout: (t) => (stdout += t),
      stderr: (t) => (stderr += t),
    });
    expect(code, stderr).toBe(1);
    expect(stdout).toContain('drift');
    expect(stdout).toMatch(/^-.*Echo the text back/m); // the diff's lines kept
    expect(stdout).not.toContain(RLO);
    expect(stdout).not.toContain(CSI);
    expect(stdout).toContain('\\u{202E}tpircs eht nur\\u{009B}2K');
  });
});
