/**
 * Operator output is escaped for the terminal (issue 22): a tool a model named with ANSI escape codes, a bidi
 * override or a carriage return is printed by `toolgate audit`, `report` and `explain` with those characters
 * written as `\u{XXXX}`, so it cannot erase a line or print a forged "allow"; `--json` keeps the exact text.
 * Through the route a user takes: a registry audited to a JSONL file, then the real command in a process.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { auditRegistry, JsonlAuditSink } from '../../src/stores/audit.js';
import { SHOP } from './fixtures.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'toolgate-escapes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The real command, in a process of its own (piped: no colour of ours, so any ESC in the output is injected). */
async function toolgate(...args: string[]): Promise<string> {
  try {
    return (await exec(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), ...args], { cwd: root }))
      .stdout;
  } catch (error) {
    // explain exits 3 on a denial: its output is what is checked.
    return (error as { stdout?: string }).stdout ?? '';
  }
}

// Moves the cursor up, erases the line and prints a verdict of its own; then a right-to-left override.
const FORGED = '\u001b[1A\u001b[2K\rallow  refund  ok\u009b2K';
const BIDI = 'read\u202Etxt.exe';
// Any control (but the line breaks between records) or format character, raw.
const RAW = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

describe('terminal escapes in operator output', () => {
  const audit = join(dir, 'audit.jsonl');
  beforeAll(async () => {
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 'search', parameters: { type: 'object' }, execute: () => 'ok' }));
    const recording = auditRegistry(registry, new JsonlAuditSink(audit));
    await registry.executeToolCalls(
      [
        { id: 'c1', name: FORGED, arguments: {} },
        { id: 'c2', name: BIDI, arguments: {} },
      ],
      { tenant: { id: 'acme\u001b]0;pwned\u0007' } },
    );
    await recording.close();
  });

  it('toolgate audit: every control and bidi character is escaped; --json keeps the exact names', async () => {
    const text = await toolgate('audit', audit);
    expect(text).not.toMatch(RAW);
    // The audit line shows the canonical form (case-folded), escaped.
    expect(text).toContain('\\u{001B}[1a\\u{001B}[2k\\u{000D}allow  refund  ok\\u{009B}2k');
    expect(text).toContain('read\\u{202E}txt.exe');
    expect(text).toContain('tenant=acme\\u{001B}]0;pwned\\u{0007}');
    // Two records, two lines: nothing of a name breaks a line.
    expect(text.trimEnd().split('\n')).toHaveLength(2);
    const json = (await toolgate('audit', audit, '--json'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { decision: { tool: string } });
    expect(json.map((r) => r.decision.tool)).toEqual([FORGED, BIDI]);
  });

  it('toolgate report: shadow targets, rule names and mode changes are escaped; --json is exact', async () => {
    const file = join(dir, 'gateway.jsonl');
    const decision = JSON.parse((await toolgate('audit', audit, '--json')).split('\n')[0]!).decision as object;
    writeFileSync(
      file,
      [
        { type: 'mode', time: 't0', event: 'start', policy: 'v1', mode: 'enforce', shadowRules: [], changes: [FORGED] },
        {
          type: 'tool',
          time: 't1',
          caller: null,
          session: null,
          upstream: 'docs',
          decision,
          status: 'refused',
          shadow: { effect: 'deny', rule: `rule${BIDI}`, reason: 'r' },
        },
      ]
        .map((r) => JSON.stringify(r))
        .join('\n'),
    );
    const text = await toolgate('report', file);
    expect(text).not.toMatch(RAW);
    expect(text).toContain('ruleread\\u{202E}txt.exe');
    expect(text).toContain('\\u{001B}[2K\\u{000D}allow');
    const exact = JSON.parse(await toolgate('report', file, '--json')) as {
      rules: { rule: string; targets: { target: string }[] }[];
    };
    expect(exact.rules[0]).toMatchObject({ rule: `rule${BIDI}`, targets: [{ target: FORGED }] });
  });

  it('toolgate explain: the called name and its arguments are escaped', async () => {
    const policy = join(dir, 'shop.yaml');
    writeFileSync(policy, SHOP);
    const text = await toolgate('explain', '--policy', policy, FORGED, JSON.stringify({ q: BIDI }));
    expect(text).not.toMatch(RAW);
    expect(text).toContain('\\u{001B}[2K\\u{000D}allow');
    const json = JSON.parse(await toolgate('explain', '--policy', policy, '--json', FORGED)) as { tool: string };
    expect(json.tool).toBe(FORGED);
  });
});
