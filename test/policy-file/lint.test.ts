import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { skeleton } from '../../src/policy-file/index.js';
import { confusableFindings, lintPolicyFile, lintPolicyText, type LintFinding } from '../../src/policy-file/index.js';

const fixture = (name: string): string => join(import.meta.dirname, 'fixtures', name);

function findings(text: string): LintFinding[] {
  return [...lintPolicyText(text, 'p.yaml').findings];
}

function only(text: string, code: string): LintFinding[] {
  return findings(text).filter((f) => f.code === code);
}

describe('lint', () => {
  it('finds nothing wrong with the example policy', async () => {
    const report = await lintPolicyFile(fixture('concierge.yaml'));
    expect(report).toMatchObject({ loaded: true, errors: 0, warnings: 0, findings: [] });
  });

  it('shadowed-rule: an earlier rule that matches every call a later one does (error when results differ)', () => {
    const text = `version: 1
tools:
  read_file: { tags: [read_only] }
  "mcp:fetch": { tags: [network] }
rules:
  - { name: reads, result: allow, tags: [read_only] }
  - { name: no_reads, result: deny, tools: read_file, when: { path: { prefix: /etc } } }
  - { name: mcp_all, result: ask, tools: "mcp:*" }
  - { name: mcp_fetch, result: ask, tools: "MCP:fetch" }
  - { name: fine, result: deny, tools: read_file, when: { path: { prefix: /tmp } } }
`;
    const found = only(text, 'shadowed-rule');
    expect(found.map((f) => [f.line, f.severity])).toEqual([
      [7, 'error'],
      [9, 'warning'],
      [10, 'error'],
    ]);
    expect(found[0]!.message).toMatch(/rule "no_reads" \(deny\) is shadowed by rule "reads" \(allow, line 6\)/);
  });

  it('shadowed-rule: conditions of the earlier rule must all be made by the later one', () => {
    const text = `version: 1
tools: { t: {} }
rules:
  - { name: a, result: deny, tools: t, when: { x: { gt: 5 } } }
  - { name: b, result: allow, tools: t, when: { x: { gt: 5 }, y: { equals: 1 } } }
  - { name: c, result: allow, tools: t, when: { y: { equals: 1 } } }
`;
    expect(only(text, 'shadowed-rule').map((f) => f.message)).toEqual([
      expect.stringMatching(/"b" \(allow\) is shadowed by rule "a"/),
    ]);
  });

  it('never-matches: contradictory conditions, and a namespace no selected tool is in', () => {
    const text = `version: 1
tools: { t: {}, "gh:x": {} }
rules:
  - { name: interval, result: deny, tools: t, when: { n: { gt: 10, lt: 5 } } }
  - { name: equal, result: deny, tools: t, when: { m: { equals: a, oneOf: [b, c] } } }
  - { name: absent, result: deny, tools: t, when: { m: { exists: false, prefix: x } } }
  - { name: empty, result: deny, tools: t, when: { m: { oneOf: [] } } }
  - { name: ns, result: deny, tools: t, namespace: gh }
  - { name: range, result: deny, tools: t, when: { n: { equals: 3, gte: 4 } } }
  - { name: fine, result: deny, tools: t, when: { n: { gte: 4, lte: 4 } } }
`;
    const found = only(text, 'never-matches');
    expect(found.map((f) => [f.line, f.severity])).toEqual([
      [4, 'error'],
      [5, 'error'],
      [6, 'error'],
      [7, 'error'],
      [8, 'error'],
      [9, 'error'],
    ]);
    expect(found[0]!.message).toMatch(/argument "n" must be > 10 and < 5: no number is/);
  });

  it('never-matches: a tag or glob that selects no declared tool (warning)', () => {
    const text = `version: 1
tools: { t: { tags: [read_only] } }
rules:
  - { name: nets, result: ask, tags: [network] }
  - { name: mcp, result: deny, tools: "mcp:*" }
`;
    expect(only(text, 'never-matches').map((f) => [f.line, f.severity])).toEqual([
      [4, 'warning'],
      [5, 'warning'],
    ]);
  });

  it('canonical-collision: one list with two spellings is refused; two sections with two spellings are a warning', () => {
    const refused = lintPolicyText('version: 1\nagents:\n  bot: { tools: [Search, search] }\n', 'p.yaml');
    expect(refused.loaded).toBe(false);
    expect(refused.findings).toEqual([
      expect.objectContaining({ code: 'canonical-collision', severity: 'error', line: 3, column: 26 }),
    ]);
    const warned = only(
      'version: 1\ntools: { search: {} }\nagents:\n  bot: { tools: [SEARCH] }\n',
      'canonical-collision',
    );
    expect(warned).toEqual([expect.objectContaining({ severity: 'warning', line: 4, column: 18 })]);
  });

  it('confusable-name: lookalikes and mixed scripts', () => {
    // "rеad_file" holds a Cyrillic е.
    const found = only(
      'version: 1\ntools:\n  read_file: {}\n  "r\u0435ad_file": {}\n  "payрal": {}\n',
      'confusable-name',
    );
    expect(found.map((f) => f.message)).toEqual([
      expect.stringMatching(/"r\u0435ad_file" mixes scripts \(Latin, Cyrillic\)/),
      expect.stringMatching(/"r\u0435ad_file" looks like "read_file"/),
      expect.stringMatching(/"payрal" mixes scripts/),
    ]);
    expect(skeleton('dеlete')).toBe(skeleton('delete'));
    expect(skeleton('rn_tool')).toBe(skeleton('m_tool'));
    expect(confusableFindings(['search', 'Search', 'ｓｅａｒｃｈ'])).toEqual([]);
  });

  it('unknown-tag: neither predefined nor a custom tag of a declared tool', () => {
    const text =
      'version: 1\ntools: { pay: { customTags: [payments] } }\nrules:\n  - { name: a, result: ask, tags: [payments, read_only, paymnets] }\n';
    expect(only(text, 'unknown-tag')).toEqual([
      expect.objectContaining({ severity: 'error', line: 4, message: expect.stringMatching(/tag "paymnets"/) }),
    ]);
  });

  it('undeclared-tool: tenants, scopes and rules naming tools nothing declares', () => {
    const text = `version: 1
agents: { bot: { tools: [search] } }
tenants: { acme: { tools: [search, serach] } }
scopes: { read: [search, fetch] }
rules:
  - { name: a, result: deny, tools: [search, delete] }
  - { name: b, result: deny, tools: "sea*" }
`;
    expect(only(text, 'undeclared-tool').map((f) => [f.line, f.message])).toEqual([
      [3, expect.stringMatching(/tenant "acme" names "serach"/)],
      [4, expect.stringMatching(/scope "read" names "fetch"/)],
      [6, expect.stringMatching(/rule "a" names "delete"/)],
    ]);
  });

  it('undeclared-agent: a peer that is not a declared agent', async () => {
    const report = await lintPolicyFile(fixture('lint-errors.yaml'));
    expect(report.loaded).toBe(true);
    expect(report.findings.map((f) => [f.code, f.line, f.column])).toEqual([
      ['undeclared-agent', 8, 13],
      ['shadowed-rule', 13, 5],
    ]);
    expect(report.errors).toBe(2);
  });

  it('tenant-grants-undeclared: a tenant granting a tool no agent declares', () => {
    const text =
      'version: 1\ntools: { search: {}, admin: {} }\nagents: { bot: { tools: [search] } }\ntenants: { acme: { tools: [search, admin] } }\n';
    expect(only(text, 'tenant-grants-undeclared')).toEqual([
      expect.objectContaining({
        severity: 'warning',
        line: 4,
        message: expect.stringMatching(/grants "admin", which no agent declares/),
      }),
    ]);
  });

  it('reports a file that does not load as errors, with positions', async () => {
    const report = await lintPolicyFile(fixture('broken.yaml'));
    expect(report).toMatchObject({ loaded: false, errors: 2, warnings: 0 });
    expect(report.findings.map((f) => `${f.line}:${f.column} ${f.code}`)).toEqual(['7:13 schema', '11:5 schema']);
  });
});
