/**
 * explain and the diff agree (issue 26, item 5). Over random rule sets and random edits of them:
 * - every example the diff reports, replayed through explain (`previewDecision`) against each file, gets
 *   the two verdicts the diff claims;
 * - on a small domain (two tools, a numeric and a string argument, values around every bound and pattern
 *   the generator uses, with and without a tenant), every call is enumerated: each call decided
 *   differently lies in a region the diff reports (same tool, same verdicts), or in one it says may
 *   change; and a diff that says "no change" has no such call.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffPolicies, type DiffVerdict, type PolicyDiff } from '../../src/policy-file/diff/index.js';
import { previewDecision } from '../../src/policy-file/explain.js';
import { parsePolicy } from '../../src/policy-file/load.js';
import type { PolicySet } from '../../src/policy-file/policy-set.js';
import { itemTool } from '../../src/policy-file/items.js';
import { ToolRegistry } from '../../src/registry.js';

type Cond = Record<string, unknown>;
interface Rule {
  name: string;
  result: 'allow' | 'deny' | 'ask';
  tools?: string | string[];
  tags?: string[];
  when?: Record<string, Cond>;
}
interface Policy {
  fallback: 'allow' | 'deny' | 'ask';
  tenant: string[] | null;
  rules: Rule[];
}

const NUMBER_CONDS: fc.Arbitrary<Cond> = fc.oneof(
  fc.record({ gt: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ gte: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ lt: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ lte: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ gt: fc.integer({ min: 0, max: 2 }), lt: fc.integer({ min: 2, max: 5 }) }),
  fc.record({ equals: fc.constantFrom(1, 2) }),
  fc.record({ oneOf: fc.constantFrom([1, 3], [2], [0, 4]) }),
  fc.record({ exists: fc.boolean() }),
);
const STRING_CONDS: fc.Arbitrary<Cond> = fc.oneof(
  fc.record({ prefix: fc.constantFrom('/a', '/a/', '/b') }),
  fc.record({ glob: fc.constantFrom('/a/*', '/a/**', '/*', '/b/**', '/a/b') }),
  fc.record({ path: fc.constantFrom('/a/**', '/a/b', '/b/**', '/**', '/a/*') }),
  fc.record({ equals: fc.constantFrom('/a', '/a/b') }),
  fc.record({ exists: fc.boolean() }),
);

const ruleArb = (name: string): fc.Arbitrary<Rule> =>
  fc
    .record({
      result: fc.constantFrom('allow', 'deny', 'ask') as fc.Arbitrary<Rule['result']>,
      selector: fc.constantFrom('t1', 't2', 'both', 'tag', 'none'),
      n: fc.option(NUMBER_CONDS, { nil: undefined }),
      s: fc.option(STRING_CONDS, { nil: undefined }),
    })
    .map(({ result, selector, n, s }) => {
      const rule: Rule = { name, result };
      if (selector === 't1' || selector === 't2') rule.tools = selector;
      if (selector === 'both') rule.tools = ['t1', 't2'];
      if (selector === 'tag') rule.tags = ['read_only'];
      const when: Record<string, Cond> = {};
      if (n) when['n'] = n;
      if (s) when['s'] = s;
      // A rule with no selector and no condition would take every call: keep some, but not most.
      if (selector === 'none' && !n && !s) rule.tools = ['t1', 't2'];
      if (Object.keys(when).length > 0) rule.when = when;
      return rule;
    });

const policyArb: fc.Arbitrary<Policy> = fc
  .record({
    fallback: fc.constantFrom('allow', 'deny', 'ask') as fc.Arbitrary<Policy['fallback']>,
    tenant: fc.option(fc.subarray(['t1', 't2']), { nil: null }),
    count: fc.integer({ min: 0, max: 5 }),
    seed: fc.array(ruleArb('x'), { minLength: 5, maxLength: 5 }),
  })
  .map(({ fallback, tenant, count, seed }) => ({
    fallback,
    tenant,
    rules: seed.slice(0, count).map((r, i) => ({ ...r, name: `r${i}` })),
  }));

type Edit = (p: Policy) => Policy;
const editArb: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ i: fc.nat(), result: fc.constantFrom('allow', 'deny', 'ask') }).map(
    ({ i, result }): Edit =>
      (p) =>
        p.rules.length === 0
          ? p
          : {
              ...p,
              rules: p.rules.map((r, k) => (k === i % p.rules.length ? { ...r, result: result as Rule['result'] } : r)),
            },
  ),
  fc.record({ i: fc.nat(), j: fc.nat() }).map(({ i, j }): Edit => (p) => {
    if (p.rules.length < 2) return p;
    const rules = [...p.rules];
    const [moved] = rules.splice(i % rules.length, 1);
    rules.splice(j % (rules.length + 1), 0, moved!);
    return { ...p, rules };
  }),
  fc.nat().map(
    (i): Edit =>
      (p) =>
        p.rules.length === 0 ? p : { ...p, rules: p.rules.filter((_, k) => k !== i % p.rules.length) },
  ),
  fc.record({ i: fc.nat(), rule: ruleArb('added') }).map(({ i, rule }): Edit => (p) => {
    const rules = [...p.rules];
    rules.splice(i % (rules.length + 1), 0, rule);
    return { ...p, rules };
  }),
  fc.record({ i: fc.nat(), delta: fc.constantFrom(-1, 1) }).map(
    ({ i, delta }): Edit =>
      (p) =>
        p.rules.length === 0
          ? p
          : {
              ...p,
              rules: p.rules.map((r, k) => {
                if (k !== i % p.rules.length || !r.when?.['n']) return r;
                const n = Object.fromEntries(
                  Object.entries(r.when['n']).map(([op, v]) => [
                    op,
                    typeof v === 'number' && op !== 'equals' ? v + delta : v,
                  ]),
                );
                return { ...r, when: { ...r.when, n } };
              }),
            },
  ),
  fc
    .constantFrom('allow', 'deny', 'ask')
    .map((fallback): Edit => (p) => ({ ...p, fallback: fallback as Policy['fallback'] })),
  fc.option(fc.subarray(['t1', 't2']), { nil: null }).map((tenant): Edit => (p) => ({ ...p, tenant })),
  fc.nat().map(
    (i): Edit =>
      (p) =>
        p.rules.length === 0
          ? p
          : {
              ...p,
              rules: p.rules.map((r, k) => (k === i % p.rules.length ? { ...r, name: `${r.name}_renamed` } : r)),
            },
  ),
);

function text(p: Policy): string {
  return JSON.stringify({
    version: 1,
    fallback: p.fallback,
    tools: { t1: { tags: ['read_only'] }, t2: { tags: ['destructive'] } },
    tenants: { acme: p.tenant === null ? {} : { tools: p.tenant } },
    // Edits may add a second rule of one name: the file wants them unique.
    rules: p.rules.map((r, i) =>
      p.rules.findIndex((q) => q.name === r.name) === i ? r : { ...r, name: `${r.name}_${i}` },
    ),
  });
}

function load(p: Policy): PolicySet {
  const r = parsePolicy(text(p), { format: 'yaml' });
  if (!r.ok) throw new Error(r.issues.map((i) => i.message).join('\n'));
  return r.policy;
}

const NUMBERS: unknown[] = [undefined, -1, 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 'x'];
const STRINGS: unknown[] = [
  undefined,
  '/a',
  '/a/b',
  '/a/b/c',
  '/a/c',
  '/ab',
  '/b',
  '/b/a',
  '/c',
  'a',
  '/a/../b',
  '/../a',
  7,
];

type Who = { tenant?: string };
const WHOS: Who[] = [{}, { tenant: 'acme' }];

interface Seen {
  effect: string;
  by: string;
  rule: string | null;
  stage: string;
}

const registries = new WeakMap<PolicySet, Map<string, ToolRegistry>>();

/**
 * The verdict explain gives. A tool the file does not describe is the live tool, with its own tags (the
 * example says which): registered beside the file's stubs as such. A resource read or prompt get is decided
 * as the gateway decides it (gateway/items.ts): its one item tool under the file's `resources:` or
 * `prompts:` policy, never under the tool rules.
 */
async function verdict(
  set: PolicySet,
  tool: string,
  args: Record<string, unknown>,
  who: Who,
  ownTags?: readonly string[],
): Promise<Seen> {
  const key = `${tool}:${(ownTags ?? []).join(',')}`;
  let byTool = registries.get(set);
  if (!byTool) registries.set(set, (byTool = new Map()));
  let registry = byTool.get(key);
  const item = (tool === 'resource' || tool === 'prompt') && !set.tools.some((t) => t.canonicalName === tool);
  if (!registry && item) {
    registry = new ToolRegistry({ confusables: 'off' });
    registry.register(itemTool(tool, () => null));
    registry.setPermissionPolicy(tool === 'resource' ? set.resources.policy : set.prompts.policy);
    byTool.set(key, registry);
  }
  if (!registry) {
    registry = set.registry({ confusables: 'off' });
    if (!set.tools.some((t) => t.canonicalName === tool)) {
      registry.unregister(tool);
      registry.register({
        name: tool,
        parameters: { type: 'object' },
        metadata: { customTags: [...(ownTags ?? [])] },
        execute: () => null,
      });
    }
    byTool.set(key, registry);
  }
  const d = await previewDecision(set, { name: tool, arguments: args }, who, registry);
  return { effect: d.effect, by: d.by, rule: d.rule, stage: d.stage };
}

function content(set: PolicySet, name: string | null): string {
  const r = set.rules.find((x) => x.name === name);
  if (!r) return '';
  const { name: _n, reason: _r, ...rest } = r.data;
  return JSON.stringify(rest);
}

function differ(a: Seen, b: Seen, old: PolicySet, next: PolicySet): boolean {
  if (a.effect !== b.effect) return true;
  if (a.effect !== 'ask') return false;
  return a.rule !== b.rule && content(old, a.rule) !== content(next, b.rule);
}

function sameAs(claim: DiffVerdict, seen: Seen): boolean {
  return claim.effect === seen.effect && claim.rule === seen.rule && claim.stage === seen.stage;
}

async function check(oldPolicy: Policy, newPolicy: Policy): Promise<void> {
  const old = load(oldPolicy);
  const next = load(newPolicy);
  const diff: PolicyDiff = await diffPolicies(old, next);
  // Every example replays as claimed.
  for (const c of diff.changes) {
    if (c.kind === 'limit') continue;
    const who = c.example.who as Who;
    const own = c.example.ownTags;
    const a = await verdict(old, c.tool, { ...c.example.arguments }, who, own);
    const b = await verdict(next, c.tool, { ...c.example.arguments }, who, own);
    expect(sameAs(c.old, a), `old verdict of ${JSON.stringify(c.example)}`).toBe(true);
    expect(sameAs(c.new, b), `new verdict of ${JSON.stringify(c.example)}`).toBe(true);
    expect(differ(a, b, old, next)).toBe(true);
  }
  // Every call of the small domain decided differently is in a reported region.
  for (const tool of ['t1', 't2'])
    for (const who of WHOS)
      for (const n of NUMBERS)
        for (const s of STRINGS) {
          const args: Record<string, unknown> = {};
          if (n !== undefined) args['n'] = n;
          if (s !== undefined) args['s'] = s;
          const a = await verdict(old, tool, args, who);
          const b = await verdict(next, tool, args, who);
          if (!differ(a, b, old, next)) continue;
          expect(
            diff.equal,
            `"no change" but ${tool} ${JSON.stringify(args)} ${JSON.stringify(who)}: ${JSON.stringify(a)} → ${JSON.stringify(b)}`,
          ).toBe(false);
          const reported = diff.changes.some(
            (c) =>
              c.tool === tool &&
              c.old.effect === a.effect &&
              c.new.effect === b.effect &&
              c.old.rule === a.rule &&
              c.new.rule === b.rule &&
              c.old.stage === a.stage &&
              c.new.stage === b.stage &&
              (who.tenant === undefined ? c.example.who.tenant === undefined || a.stage !== 'allowlist' : true),
          );
          const uncertain = diff.uncertain.some((u) => u.tool === tool);
          expect(
            reported || uncertain,
            `${tool} ${JSON.stringify(args)} ${JSON.stringify(who)}: ${JSON.stringify(a)} → ${JSON.stringify(b)} is not in any region of ${JSON.stringify(diff.changes.map((c) => [c.tool, c.old.rule, c.new.rule, c.example]))}`,
          ).toBe(true);
        }
}

describe('policy diff and explain agree', () => {
  it('every example replays as claimed, and every changed call of a small domain is reported', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb, fc.array(editArb, { minLength: 1, maxLength: 3 }), async (p, edits) => {
        await check(
          p,
          edits.reduce((q, e) => e(q), p),
        );
      }),
      { numRuns: 120 },
    );
  }, 120_000);

  it('a policy diffed with itself is equal', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb, async (p) => {
        const d = await diffPolicies(load(p), load(p));
        expect(d.equal).toBe(true);
        expect(d.settings).toEqual([]);
      }),
      { numRuns: 50 },
    );
  });
});
