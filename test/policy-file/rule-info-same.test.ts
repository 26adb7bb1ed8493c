/**
 * A loaded rule's core form (rule-info.ts) decides as the form built before it was rewritten without
 * spreads and per-rule closures: on random files (exact names, globs, namespaces, tags, conditions) and
 * random calls, the policy a load builds and one built from the old `toPermissionRule` (kept below as it
 * was) evaluate every call alike, and each rule has the same fields in the same order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineTool, PermissionPolicy, type PermissionRule, type Tool } from '../../src/index.js';
import { parsePolicy, type PolicyRuleInfo } from '../../src/policy-file/index.js';
import { runTests } from '../../src/policy-file/matchers.js';

/** `toPermissionRule` of src/policy-file/load.ts at e8a75a3, word for word. */
function oldToPermissionRule(info: PolicyRuleInfo): PermissionRule {
  const { exact, globs, namespace, tags, tests } = info;
  const useIndex = globs.length === 0 && exact.length > 0;
  const exactSet = globs.length > 0 || namespace !== null ? new Set(exact) : null;
  const select =
    exactSet !== null
      ? (tool: Tool): boolean => {
          if (namespace !== null && tool.namespace !== namespace) return false;
          if (globs.length === 0 && exact.length === 0) return true;
          return exactSet.has(tool.canonicalName) || globs.some((g) => g.test(tool.canonicalName));
        }
      : undefined;
  const match =
    tests.length > 0
      ? (_tool: Tool, params: Readonly<Record<string, unknown>>): boolean => {
          const verdict = runTests(tests, params);
          if (typeof verdict === 'string') throw new Error(`${verdict}; the call cannot be judged safely`);
          return verdict;
        }
      : undefined;
  return {
    name: info.name,
    result: info.result,
    ...(info.reason !== null ? { reason: info.reason } : {}),
    ...(useIndex ? { tools: exact } : {}),
    ...(tags ? { tags } : {}),
    ...(select ? { select } : {}),
    ...(match ? { match } : {}),
    ...(!useIndex && !tags && !select && !match ? { match: () => true } : {}),
  };
}

const NAMES = ['read', 'write', 'Write', 'fs.read', 'fs.delete', 'mail.send', 'ｒｅａｄ'];
const PATTERNS = [...NAMES, 'fs.*', '*', 'mail.*', '*ea*', '{read,write}'];
const TOOLS = NAMES.slice(0, 6).map((name) =>
  defineTool({
    name,
    parameters: { type: 'object' },
    execute: () => 'ok',
    ...(name === 'write' || name === 'fs.delete' ? { metadata: { tags: ['destructive'] } } : {}),
  }),
);
const PARAMS = [{}, { path: '/data/x' }, { path: '/etc/passwd' }, { path: 3 }];

const fileRule = fc.record(
  {
    result: fc.constantFrom('allow', 'deny', 'ask'),
    tools: fc.oneof(fc.constantFrom(...PATTERNS), fc.subarray(PATTERNS, { minLength: 1, maxLength: 3 })),
    namespace: fc.constantFrom('fs', 'mail'),
    tags: fc.constant(['destructive']),
    when: fc.constant({ path: { path: '/data/**' } }),
    reason: fc.constantFrom('because', 'a reason'),
  },
  { requiredKeys: ['result'] },
);

describe('a loaded rule decides as before', () => {
  it('on random files and calls', () => {
    fc.assert(
      fc.property(fc.array(fileRule, { minLength: 1, maxLength: 6 }), (specs) => {
        const rules = specs.map((spec, i) => ({ name: `r${i}`, ...spec }));
        const loaded = parsePolicy(JSON.stringify({ version: 1, rules }), { file: 'p.json' });
        if (!loaded.ok) throw new Error(loaded.issues.map((i) => i.message).join('\n'));
        const now = loaded.policy.policy;
        const old = new PermissionPolicy({
          rules: loaded.policy.rules.map(oldToPermissionRule),
          fallback: now.fallback,
          version: now.version,
        });
        now.rules.forEach((rule, i) => expect(Object.keys(rule)).toEqual(Object.keys(old.rules[i]!)));
        for (const tool of TOOLS)
          for (const params of PARAMS) {
            const a = now.evaluate(tool, params);
            const b = old.evaluate(tool, params);
            expect([a.result, a.by, a.rule?.name]).toEqual([b.result, b.by, b.rule?.name]);
          }
      }),
      { numRuns: 200 },
    );
  });
});
