/**
 * The two ways a policy file is read (issue 12): js-yaml for a file that loads, `yaml`'s positioned
 * Document for one with something to report. They must read every file alike, and positions must be
 * right either way.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load as loadYaml } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parsePolicy } from '../../src/policy-file/index.js';

const FIXTURES = join(import.meta.dirname, 'fixtures');

describe('reading a policy file', () => {
  it('js-yaml and yaml read every fixture and example to the same data', () => {
    const files = [
      ...readdirSync(FIXTURES).map((f) => join(FIXTURES, f)),
      join(import.meta.dirname, '..', '..', 'examples', 'policies', 'concierge.yaml'),
    ].filter((f) => /\.(ya?ml|json)$/.test(f));
    expect(files.length).toBeGreaterThan(2);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      let quick: unknown;
      try {
        quick = loadYaml(text, { maxAliases: 0 });
      } catch {
        continue; // a broken fixture: read by yaml alone
      }
      expect(quick, file).toEqual(parseYaml(text, { uniqueKeys: true, strict: true }));
    }
  });

  it('reads scalars as YAML 1.2 core does, whichever parser reads them', () => {
    const text = [
      'a: [yes, no, on, off, y, n]',
      'b: [0o17, 0x1F, 017, 1_000, .inf, -.Inf, .nan, 1e3, +12]',
      'c: [null, Null, ~, "", true, True, FALSE]',
      'd: [2024-01-01, 12:30:00, "0x1F"]',
    ].join('\n');
    const quick = loadYaml(text, { maxAliases: 0 });
    const positioned = parseYaml(text, { uniqueKeys: true, strict: true }) as unknown;
    expect(JSON.stringify(quick)).toEqual(JSON.stringify(positioned));
  });

  it("a clean load still knows each rule's line and column", () => {
    const text = 'version: 1\nrules:\n  - name: first\n    result: allow\n  -   name: second\n      result: deny\n';
    const result = parsePolicy(text, { file: 'p.yaml' });
    if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
    expect(result.policy.rules.map((r) => r.position)).toEqual([
      { line: 3, column: 5 },
      { line: 5, column: 7 },
    ]);
  });

  it('aliases go to yaml, which applies its alias cap; a duplicate key is reported with its position', () => {
    const aliased = 'version: 1\nrules:\n  - &r { name: a, result: allow, tools: x }\n  - *r\n';
    const result = parsePolicy(aliased, { file: 'p.yaml' });
    // The aliased rule is the same rule twice: loaded (as before) and refused for the repeated name, if at all, by the compiler.
    const viaYaml = parsePolicy(aliased.replace('*r', '{ name: a, result: allow, tools: x }'), { file: 'p.yaml' });
    expect(result.ok).toBe(viaYaml.ok);
    const laughs = [
      'version: 1',
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]',
      'rules: []',
    ].join('\n');
    const bomb = parsePolicy(laughs, { file: 'p.yaml' });
    expect(bomb.ok).toBe(false);
    if (!bomb.ok) expect(bomb.issues[0]!.message).toMatch(/alias/i);
    const duplicate = parsePolicy('version: 1\nrules: []\nversion: 1\n', { file: 'p.yaml' });
    expect(duplicate.ok).toBe(false);
    if (!duplicate.ok) expect(duplicate.issues[0]).toMatchObject({ line: 3, code: 'yaml' });
  });
});
