/**
 * `toolgate diff` through the CLI: the cases of issue 26 ("Done when"), each with the example call the diff
 * must report, the no-op changes that must report nothing, CI's --fail-on exit codes, Markdown, and a file
 * that does not load.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/program.js';
import type { DiffChange, PolicyDiff } from '../../src/policy-file/diff/index.js';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolgate-diff-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await run(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

let n = 0;
async function files(oldText: string, newText: string): Promise<[string, string]> {
  n++;
  const a = join(dir, `old-${n}.yaml`);
  const b = join(dir, `new-${n}.yaml`);
  await writeFile(a, oldText);
  await writeFile(b, newText);
  return [a, b];
}

async function diff(oldText: string, newText: string, ...extra: string[]): Promise<{ code: number; diff: PolicyDiff }> {
  const [a, b] = await files(oldText, newText);
  const r = await cli(['diff', a, b, '--json', ...extra]);
  expect(r.stderr).toBe('');
  return { code: r.code, diff: JSON.parse(r.stdout) as PolicyDiff };
}

const FILES = `version: 1
tools:
  read_file: { tags: [read_only, file_system] }
agents:
  concierge: { tools: [read_file] }
`;

const SECRET_THEN_DATA = `${FILES}rules:
  - { name: deny_secret, result: deny, tools: read_file, when: { path: { path: "/data/secret/**" } } }
  - { name: allow_data, result: allow, tools: read_file, when: { path: { path: "/data/**" } } }
`;

const SHOP = `version: 1
tools:
  refund: { tags: [destructive] }
  search: { tags: [read_only] }
agents:
  concierge: { tools: [refund, search] }
tenants:
  free: { tools: [search] }
  pro: { tools: [search, refund] }
`;

function only(d: PolicyDiff, tool: string): DiffChange[] {
  return d.changes.filter((c) => c.tool === tool);
}

describe('toolgate diff: the cases of issue 26', () => {
  it('a rule moved up past a deny: the calls the deny refused are newly allowed', async () => {
    const moved = `${FILES}rules:
  - { name: allow_data, result: allow, tools: read_file, when: { path: { path: "/data/**" } } }
  - { name: deny_secret, result: deny, tools: read_file, when: { path: { path: "/data/secret/**" } } }
`;
    const { code, diff: d } = await diff(SECRET_THEN_DATA, moved, '--fail-on', 'widen');
    expect(code).toBe(1);
    const inside = d.changes.find((c) => c.old.by === 'rule');
    expect(inside).toMatchObject({
      kind: 'allowed',
      direction: 'widen',
      tool: 'read_file',
      example: { tool: 'read_file', arguments: { path: '/data/secret/a' } },
      old: { effect: 'deny', rule: 'deny_secret' },
      new: { effect: 'allow', rule: 'allow_data' },
    });
    // The folder itself: the old deny could not judge it (a rule_error), the new allow takes it.
    expect(d.changes.find((c) => c.old.by === 'rule_error')?.example.arguments).toEqual({ path: '/data/secret' });
    expect(d.changes.every((c) => c.direction === 'widen')).toBe(true);
    expect(d.narrows).toBe(false);
  });

  it('a fully shadowed allow changes nothing', async () => {
    const shadowed = `${SECRET_THEN_DATA}  - { name: allow_reports, result: allow, tools: read_file, when: { path: { path: "/data/secret/reports/**" } } }
`;
    const { code, diff: d } = await diff(SECRET_THEN_DATA, shadowed, '--fail-on', 'any');
    expect(code).toBe(0);
    expect(d).toMatchObject({ equal: true, widens: false, narrows: false, changes: [], uncertain: [] });
  });

  it('a glob narrowed under a deny-then-allow pair: what the pair allowed outside the new glob is newly denied', async () => {
    const narrowed = SECRET_THEN_DATA.replace('path: "/data/**"', 'path: "/data/public/**"');
    const { code, diff: d } = await diff(SECRET_THEN_DATA, narrowed, '--fail-on', 'narrow');
    expect(code).toBe(1);
    expect(d.widens).toBe(false);
    const denied = d.changes.find((c) => c.old.by === 'rule' && c.new.by === 'fallback');
    expect(denied).toMatchObject({
      kind: 'denied',
      direction: 'narrow',
      old: { effect: 'allow', rule: 'allow_data' },
      new: { effect: 'deny', rule: null },
    });
    const path = denied!.example.arguments['path'] as string;
    expect(path.startsWith('/data/')).toBe(true);
    expect(path.startsWith('/data/public/') || path.startsWith('/data/secret/')).toBe(false);
    // Nothing under the deny changes: it still decides first.
    expect(d.changes.some((c) => (c.example.arguments['path'] as string).startsWith('/data/secret/'))).toBe(false);
  });

  it('a numeric bound moved by one: the one value between is reported', async () => {
    const rules = (bound: number): string => `${SHOP}rules:
  - { name: big_refunds, result: ask, tools: refund, when: { amount: { gt: ${bound} } } }
  - { name: refunds, result: allow, tools: refund }
`;
    const { diff: d } = await diff(rules(100), rules(101));
    expect(d.changes).toHaveLength(1);
    expect(d.changes[0]).toMatchObject({
      kind: 'allowed',
      tool: 'refund',
      example: { tool: 'refund', arguments: { amount: 101 } },
      old: { effect: 'ask', rule: 'big_refunds' },
      new: { effect: 'allow', rule: 'refunds' },
    });
    // The other way round: 101 is newly asked.
    const back = await diff(rules(101), rules(100));
    expect(back.diff.changes[0]).toMatchObject({
      kind: 'asked',
      direction: 'narrow',
      example: { arguments: { amount: 101 } },
    });
  });

  it('a tag added to a tool: a rule on that tag now decides it', async () => {
    const tagged = (tags: string): string => `version: 1
tools:
  refund: { tags: [${tags}] }
rules:
  - { name: deny_privileged, result: deny, tags: [privileged] }
  - { name: refunds, result: allow, tools: refund }
`;
    const { diff: d } = await diff(tagged('destructive'), tagged('destructive, privileged'));
    expect(d.changes).toHaveLength(1);
    expect(d.changes[0]).toMatchObject({
      kind: 'denied',
      tool: 'refund',
      example: { tool: 'refund', arguments: {} },
      old: { effect: 'allow', rule: 'refunds' },
      new: { effect: 'deny', rule: 'deny_privileged' },
    });
  });

  it("a tenant's plan widened: the tool is newly allowed for that tenant only", async () => {
    const plan = (
      free: string,
    ): string => `${SHOP.replace('free: { tools: [search] }', `free: { tools: [${free}] }`)}rules:
  - { name: refunds, result: allow, tools: refund }
  - { name: searches, result: allow, tools: search }
`;
    const { diff: d } = await diff(plan('search'), plan('search, refund'));
    expect(d.changes).toHaveLength(1);
    expect(d.changes[0]).toMatchObject({
      kind: 'allowed',
      tool: 'refund',
      who: { tenants: ['free'] },
      example: { tool: 'refund', who: { tenant: 'free' } },
      old: { effect: 'deny', stage: 'allowlist', layer: 'tenant' },
      new: { effect: 'allow', rule: 'refunds' },
    });
  });

  it('an ask turned into an allow', async () => {
    const rule = (result: string): string => `${SHOP}rules:
  - { name: refunds, result: ${result}, tools: refund, when: { amount: { lte: 50 } } }
`;
    const { diff: d } = await diff(rule('ask'), rule('allow'));
    expect(d.changes).toHaveLength(1);
    expect(d.changes[0]).toMatchObject({
      kind: 'allowed',
      direction: 'widen',
      tool: 'refund',
      old: { effect: 'ask', rule: 'refunds' },
      new: { effect: 'allow', rule: 'refunds' },
    });
    expect(d.changes[0]!.example.arguments['amount']).toBeLessThanOrEqual(50);
  });

  it('shadow mode turned on: every rule stops being enforced and the fallback allows', async () => {
    const rules = `rules:
  - { name: no_refunds, result: deny, tools: refund }
  - { name: searches, result: allow, tools: search }
`;
    const { code, diff: d } = await diff(`${SHOP}${rules}`, `${SHOP}mode: shadow\n${rules}`, '--fail-on', 'widen');
    expect(code).toBe(1);
    expect(d.settings).toContainEqual(
      expect.objectContaining({ setting: 'mode', old: 'enforce', new: 'shadow', direction: 'widen' }),
    );
    expect(only(d, 'refund')[0]).toMatchObject({
      kind: 'allowed',
      old: { effect: 'deny', rule: 'no_refunds' },
      new: { effect: 'allow', by: 'fallback' },
    });
    // The search allow is unchanged (allowed by the fallback now): no region for it.
    expect(only(d, 'search')).toEqual([]);
  });

  it('a limit raised', async () => {
    const limit = (max: number): string => `${SHOP}rules:
  - { name: refunds, result: allow, tools: refund }
limits:
  - { name: refund_rate, per: [tenant], tools: [refund], max: ${max}, window: 1h }
`;
    const { code, diff: d } = await diff(limit(5), limit(10), '--fail-on', 'widen');
    expect(code).toBe(1);
    expect(d.changes).toHaveLength(1);
    expect(d.changes[0]).toMatchObject({
      kind: 'limit',
      direction: 'widen',
      tool: 'refund',
      example: { tool: 'refund' },
      limit: { name: 'refund_rate', old: { max: 5 }, new: { max: 10 } },
    });
  });
});

describe('toolgate diff: no false alarms', () => {
  const base = `${SHOP}rules:
  - { name: small, result: allow, tools: refund, when: { amount: { lte: 50 } } }
  - { name: searches, result: allow, tools: search }
  - { name: huge, result: deny, tools: refund, when: { amount: { gt: 1000 } } }
  - { name: mid, result: ask, tools: refund }
`;
  it.each([
    [
      'reordering rules that do not overlap',
      base.replace(
        / {2}- \{ name: small.*\n {2}- \{ name: searches.*\n {2}- \{ name: huge.*\n/,
        `  - { name: huge, result: deny, tools: refund, when: { amount: { gt: 1000 } } }
  - { name: searches, result: allow, tools: search }
  - { name: small, result: allow, tools: refund, when: { amount: { lte: 50 } } }
`,
      ),
    ],
    [
      'renaming a rule (an ask included)',
      base.replace('name: mid', 'name: medium_refunds').replace('name: small', 'name: tiny'),
    ],
    [
      'an equivalent condition',
      base
        .replace('{ amount: { lte: 50 } }', '{ amount: { lte: 50, exists: true } }')
        .replace('{ gt: 1000 }', '{ gt: 1000, gte: 0 }'),
    ],
    [
      'a fully shadowed rule',
      base.replace(
        '  - { name: mid',
        '  - { name: shadowed, result: deny, tools: refund, when: { amount: { gt: 5000 } } }\n  - { name: mid',
      ),
    ],
    [
      'reordering tools, tenants and agents',
      base.replace('[search, refund]', '[refund, search]').replace('[refund, search]', '[search, refund]'),
    ],
  ])('%s: no change in what is decided', async (_what, changed) => {
    const { code, diff: d } = await diff(base, changed, '--fail-on', 'any');
    expect(d.changes).toEqual([]);
    expect(d.uncertain).toEqual([]);
    expect(d.equal).toBe(true);
    expect(code).toBe(0);
  });

  it('equivalent string conditions: equals and a one-value oneOf, a brace glob and its list', async () => {
    const a = `${FILES}rules:
  - { name: r1, result: allow, tools: read_file, when: { mode: { equals: fast }, path: { path: "/data/{a,b}/**" } } }
`;
    const b = `${FILES}rules:
  - { name: r1, result: allow, tools: read_file, when: { mode: { oneOf: [fast] }, path: { path: ["/data/b/**", "/data/a/**"] } } }
`;
    const { diff: d } = await diff(a, b);
    expect(d).toMatchObject({ equal: true, changes: [], uncertain: [] });
  });
});

describe('toolgate diff: output and bad input', () => {
  it('prints text by default and Markdown for a pull-request comment', async () => {
    const moved = SECRET_THEN_DATA.replace('path: "/data/**"', 'path: "/data/public/**"');
    const [a, b] = await files(SECRET_THEN_DATA, moved);
    const text = await cli(['diff', a, b]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('newly denied');
    expect(text.stdout).toMatch(/example {2}read_file \{"path":"\/data\//);
    const md = await cli(['diff', a, b, '--markdown']);
    expect(md.stdout).toMatch(/^### Policy diff: /);
    expect(md.stdout).toContain('| 🔒 newly denied | `read_file` |');
  });

  it('a file that does not load is reported as lint reports it (file:line:column) and nothing is compared', async () => {
    const [a, b] = await files(SECRET_THEN_DATA, `${FILES}rules:\n  - { name: x, result: permit, tools: read_file }\n`);
    const r = await cli(['diff', a, b]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`${b}:`);
    expect(r.stderr).toMatch(/:\d+:\d+ +error +schema +rules\[0\]\.result: expected one of "allow", "deny", "ask"/);
    const missing = await cli(['diff', a, join(dir, 'nope.yaml')]);
    expect(missing.code).toBe(2);
  });

  it('refuses a bad --fail-on', async () => {
    const [a, b] = await files(SECRET_THEN_DATA, SECRET_THEN_DATA);
    const r = await cli(['diff', a, b, '--fail-on', 'wider']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--fail-on must be widen, narrow or any');
  });
});

describe('toolgate test: a diff expectation', () => {
  const rules = (bound: number, result = 'ask'): string => `${SHOP}rules:
  - { name: big_refunds, result: ${result}, tools: refund, when: { amount: { gt: ${bound} } } }
  - { name: refunds, result: allow, tools: refund }
`;
  async function testWith(inForce: string, changed: string, diffEntry: string, extra: string[] = []) {
    const [a, b] = await files(inForce, changed);
    const cases = join(dir, `cases-${n}.yaml`);
    await writeFile(
      cases,
      `cases:\n  - name: big refunds ask\n    call: { name: refund, arguments: { amount: 5000 } }\n    expect: { effect: ask }\n${diffEntry.replace('OLD', a.split('/').pop()!)}`,
    );
    return cli(['test', b, cases, ...extra.map((x) => x.replace('OLD', a))]);
  }

  it('"this change may only narrow" passes for a narrowing change and fails, naming the call, for a widening one', async () => {
    const entry = 'diff:\n  - name: this change may only narrow\n    against: OLD\n    may: narrow\n';
    const narrowing = await testWith(rules(101), rules(100), entry);
    expect(narrowing.code).toBe(0);
    expect(narrowing.stdout).toContain('pass this change may only narrow');
    const widening = await testWith(rules(100), rules(101), entry);
    expect(widening.code).toBe(1);
    expect(widening.stdout).toContain('FAIL this change may only narrow');
    expect(widening.stdout).toContain('widen: allowed refund {"amount":101} (agent concierge): ask → allow');
  });

  it('takes the expectation on the command line too, and reports it in TAP', async () => {
    const r = await testWith(rules(100), rules(100, 'allow'), '', [
      '--against',
      'OLD',
      '--may',
      'none',
      '--format',
      'tap',
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/not ok 2 - the change from .* may change nothing/);
    const bad = await testWith(rules(100), rules(100), '', ['--against', 'OLD', '--may', 'sideways']);
    expect(bad.code).toBe(2);
  });
});
