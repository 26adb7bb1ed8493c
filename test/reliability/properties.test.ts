/**
 * Property tests of the allowlist and the policy, against small reference models written here.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonical,
  ConfigurationError,
  defineTool,
  PermissionPolicy,
  ToolAllowlist,
  ToolAllowlistGuard,
  ToolNotPermittedError,
  type PermissionResult,
  type PermissionRule,
  type Tool,
} from '../../src/index.js';
import { type RefusalLayer } from '../../src/types.js';
import { anyQuery, declaration, layer, SPELLINGS, spelledName, STEMS } from './arbitraries.js';
import { DEEP, fcParams } from './size.js';
import type { MatchKind, RuleSpec } from './rule-spec.js';

type Layer = readonly string[] | null | undefined;

/** The reference model of resolution: the layer that refuses a name, or null. */
function referenceRefusal(
  declared: readonly string[],
  tenant: Layer,
  caller: Layer,
  query: string,
): RefusalLayer | null {
  const form = canonical(query);
  if (!declared.some((d) => canonical(d) === form)) return 'not_declared';
  if (tenant && !tenant.some((t) => canonical(t) === form)) return 'tenant';
  if (caller && !caller.some((c) => canonical(c) === form)) return 'caller';
  return null;
}

function outcome(
  list: ToolAllowlist,
  name: string,
): { permits: boolean; decide: ReturnType<ToolAllowlist['decide']>; thrown: unknown } {
  let thrown: unknown = null;
  try {
    list.check(name);
  } catch (error) {
    thrown = error;
  }
  return { permits: list.permits(name), decide: list.decide(name), thrown };
}

describe('the name universe', () => {
  it('spells each stem in forms with one canonical form', () => {
    for (const stem of STEMS) {
      const forms = new Set(SPELLINGS.map((spell) => canonical(spell(stem))));
      expect([...forms], stem).toEqual([canonical(stem)]);
    }
    expect(canonical('mcp:search')).not.toBe(canonical('search'));
  });
});

describe('resolution', () => {
  it('equals the intersection of the layers; permits, decide and check agree', () => {
    fc.assert(
      fc.property(
        declaration,
        layer,
        layer,
        fc.array(anyQuery, { maxLength: 12 }),
        (declared, tenant, caller, queries) => {
          const list = ToolAllowlist.resolve(declared, { tenant, caller, agent: 'prop' });
          // names: the declared spellings the reference permits, in declaration order
          expect(list.names).toEqual(declared.filter((d) => referenceRefusal(declared, tenant, caller, d) === null));
          expect(Object.isFrozen(list.names)).toBe(true);
          for (const query of [...queries, ...declared]) {
            const expected = referenceRefusal(declared, tenant, caller, query);
            const got = outcome(list, query);
            expect(got.permits).toBe(expected === null);
            expect(got.decide).toEqual(
              expected === null
                ? { tool: query, permitted: true, reason: null }
                : { tool: query, permitted: false, reason: expected },
            );
            if (expected === null) {
              expect(got.thrown).toBeNull();
            } else {
              expect(got.thrown).toBeInstanceOf(ToolNotPermittedError);
              const error = got.thrown as ToolNotPermittedError;
              expect(error.tool).toBe(query);
              expect(error.reason).toBe(expected);
              expect(error.details).toEqual({ tool: query, agent: 'prop', reason: expected });
              expect(error.permitted).toEqual(list.names);
            }
          }
        },
      ),
      fcParams(300, 20_000),
    );
  });

  it('the guard counts every decide and check, and every refusal once', () => {
    fc.assert(
      fc.property(
        declaration,
        layer,
        fc.array(fc.tuple(anyQuery, fc.boolean()), { maxLength: 20 }),
        (declared, tenant, calls) => {
          const guard = ToolAllowlistGuard.resolving(declared, { tenant });
          let refusals = 0;
          for (const [name, viaCheck] of calls) {
            const permitted = guard.allowlist.permits(name);
            if (!permitted) refusals++;
            if (viaCheck) {
              if (permitted) guard.check(name);
              else expect(() => guard.check(name)).toThrow(ToolNotPermittedError);
            } else {
              expect(guard.decide(name).permitted).toBe(permitted);
            }
          }
          expect(guard.attempts).toBe(calls.length);
          expect(guard.refusals).toBe(refusals);
          guard.permitted(declared);
          expect(guard.attempts).toBe(calls.length);
        },
      ),
      fcParams(200, 10_000),
    );
  });

  it('narrowed never widens, at any depth, and equals the intersection of the chain', () => {
    fc.assert(
      fc.property(
        declaration,
        layer,
        layer,
        fc.array(declaration, { minLength: 1, maxLength: 6 }),
        fc.array(anyQuery, { maxLength: 10 }),
        (root, tenant, caller, chain, queries) => {
          const lists = [ToolAllowlist.resolve(root, { tenant, caller })];
          for (const [depth, peer] of chain.entries())
            lists.push(lists[lists.length - 1]!.narrowed(peer, { agent: `peer${depth}` }));
          const probes = [...queries, ...root, ...chain.flat()];
          for (let depth = 1; depth < lists.length; depth++) {
            const parent = lists[depth - 1]!;
            const child = lists[depth]!;
            for (const name of probes) {
              if (child.permits(name)) {
                // permitted here ⇒ permitted at every shallower depth and declared at every depth
                for (let up = 0; up < depth; up++) expect(lists[up]!.permits(name)).toBe(true);
              }
              const reason = child.decide(name).reason;
              if (!parent.permits(name) && reason !== 'not_declared') {
                // a name the parent refused keeps a refusal; a layer the parent named is carried down
                expect(reason).not.toBeNull();
                const parentReason = parent.decide(name).reason;
                if (parentReason === 'tenant' || parentReason === 'caller') expect(reason).toBe(parentReason);
                else expect(reason).toBe('caller');
              }
            }
            // the permitted set is the reference intersection of root ∩ tenant ∩ caller ∩ every peer so far
            const permittedForms = new Set(child.names.map(canonical));
            const expected = new Set(
              chain[depth - 1]!.filter(
                (name) =>
                  referenceRefusal(root, tenant, caller, name) === null &&
                  chain.slice(0, depth).every((peer) => peer.some((p) => canonical(p) === canonical(name))),
              ).map(canonical),
            );
            expect(permittedForms).toEqual(expected);
          }
        },
      ),
      fcParams(200, 10_000),
    );
  });

  it('two spellings of one canonical form are always caught as a collision', () => {
    fc.assert(
      fc.property(fc.array(spelledName, { maxLength: 10 }), (names) => {
        let collision = false;
        for (let i = 0; i < names.length; i++) {
          for (let j = i + 1; j < names.length; j++)
            if (names[i] !== names[j] && canonical(names[i]!) === canonical(names[j]!)) collision = true;
        }
        const attempt = (): ToolAllowlist => ToolAllowlist.resolve(names, { confusables: 'off' });
        if (collision) {
          expect(attempt).toThrow(ConfigurationError);
          expect(attempt).toThrow(/same canonical form/);
        } else {
          expect(attempt().names).toEqual([...new Set(names)]);
        }
        // The same through narrowed() and through the registry.
        if (collision) expect(() => ToolAllowlist.resolve([]).narrowed(names)).toThrow(ConfigurationError);
      }),
      fcParams(300, 20_000),
    );
  });
});

describe('canonical()', () => {
  const idempotent = (s: string): void => {
    const once = canonical(s);
    expect(canonical(once)).toBe(once);
  };
  it('is idempotent on arbitrary code points, graphemes and names of the universe', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 24 }), idempotent), fcParams(3_000, 200_000));
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme-composite', maxLength: 8 }), idempotent),
      fcParams(1_000, 50_000),
    );
    fc.assert(fc.property(spelledName, idempotent), fcParams(200, 2_000));
  });

  it(`is idempotent on every single code point ${DEEP ? '' : 'of planes 0 and 1 (all planes in test:deep)'}`, () => {
    const bad: string[] = [];
    for (let cp = 0; cp < (DEEP ? 0x110000 : 0x20000); cp++) {
      const s = String.fromCodePoint(cp);
      const once = canonical(s);
      if (canonical(once) !== once) bad.push(cp.toString(16));
    }
    expect(bad).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------
// First-match evaluation against a reference interpreter

const TAGS = ['read_only', 'destructive', 'network', 'privileged'] as const;
const CUSTOM = ['billing', 'pii'] as const;

const ruleSpec: fc.Arbitrary<RuleSpec> = fc
  .record({
    tools: fc.option(fc.array(spelledName, { minLength: 1, maxLength: 3 }), { nil: undefined }),
    tags: fc.option(fc.array(fc.constantFrom(...TAGS, ...CUSTOM), { minLength: 1, maxLength: 2 }), { nil: undefined }),
    match: fc.constantFrom<MatchKind>('none', 'true', 'false', 'gt', 'gt', 'throws', 'garbage'),
    threshold: fc.integer({ min: 0, max: 10 }),
    result: fc.constantFrom<PermissionResult>('allow', 'deny', 'ask'),
  })
  // A rule with no match and no selector is a ConfigurationError (it would match every call).
  .map((spec) => (spec.match === 'none' && !spec.tools && !spec.tags ? { ...spec, match: 'true' as const } : spec));

function toRule(spec: RuleSpec, index: number): PermissionRule {
  const rule: { -readonly [K in keyof PermissionRule]: PermissionRule[K] } = { name: `r${index}`, result: spec.result };
  if (spec.tools) rule.tools = spec.tools;
  if (spec.tags) rule.tags = spec.tags;
  switch (spec.match) {
    case 'none':
      break;
    case 'true':
      rule.match = () => true;
      break;
    case 'false':
      rule.match = () => false;
      break;
    case 'gt':
      rule.match = (_tool, params) => typeof params['n'] === 'number' && params['n'] > spec.threshold;
      break;
    case 'throws':
      rule.match = () => {
        throw new Error('boom');
      };
      break;
    case 'garbage':
      rule.match = (() => 'yes') as unknown as NonNullable<PermissionRule['match']>;
      break;
  }
  return rule;
}

/** The reference interpreter: the Permission System spec's loop, written plainly. */
function referenceEvaluate(
  specs: readonly RuleSpec[],
  fallback: PermissionResult,
  tool: Tool,
  params: Record<string, unknown>,
): { result: PermissionResult; by: string; rule: string | null } {
  for (const [index, spec] of specs.entries()) {
    if (spec.tools && !spec.tools.map(canonical).includes(canonical(tool.name))) continue;
    if (spec.tags && !spec.tags.some((tag) => tool.metadata.allTags.has(tag))) continue;
    const name = `r${index}`;
    let matched: boolean;
    switch (spec.match) {
      case 'none':
      case 'true':
        matched = true;
        break;
      case 'false':
        matched = false;
        break;
      case 'gt':
        matched = typeof params['n'] === 'number' && params['n'] > spec.threshold;
        break;
      case 'throws':
      case 'garbage':
        return { result: 'deny', by: 'rule_error', rule: name };
    }
    if (matched) return { result: spec.result, by: 'rule', rule: name };
  }
  return { result: fallback, by: 'fallback', rule: null };
}

const toolSpec = fc.record({
  stem: fc.constantFrom(...STEMS),
  spelling: fc.integer({ min: 0, max: SPELLINGS.length - 1 }),
  tags: fc.subarray([...TAGS]),
  customTags: fc.subarray([...CUSTOM]),
});

describe('PermissionPolicy.evaluate', () => {
  it('equals the reference interpreter: first match decides, errors deny, else the fallback (traced or not)', () => {
    fc.assert(
      fc.property(
        fc.array(ruleSpec, { maxLength: 12 }),
        fc.constantFrom<PermissionResult>('allow', 'deny', 'ask'),
        fc.array(toolSpec, { minLength: 1, maxLength: 5 }),
        fc.array(fc.record({ n: fc.oneof(fc.integer({ min: -2, max: 12 }), fc.string({ maxLength: 2 })) }), {
          minLength: 1,
          maxLength: 4,
        }),
        (specs, fallback, tools, paramsList) => {
          const policy = new PermissionPolicy({ rules: specs.map(toRule), fallback });
          for (const t of tools) {
            const tool = defineTool({
              name: SPELLINGS[t.spelling]!(t.stem),
              parameters: { type: 'object' },
              metadata: { tags: t.tags, customTags: t.customTags },
              execute: () => undefined,
            });
            for (const params of paramsList) {
              const expected = referenceEvaluate(specs, fallback, tool, params);
              // evaluated twice: the second time from the per-tool candidate cache
              for (let pass = 0; pass < 2; pass++) {
                const got = policy.evaluate(tool, params);
                expect({ result: got.result, by: got.by, rule: got.rule?.name ?? null }).toEqual(expected);
              }
              const traced = policy.evaluate(tool, params, { trace: true });
              expect({ result: traced.result, by: traced.by, rule: traced.rule?.name ?? null }).toEqual(expected);
              expect(traced.trace).toHaveLength(specs.length);
            }
          }
        },
      ),
      fcParams(300, 20_000),
    );
  });
});
