import { describe, expect, it, vi } from 'vitest';
import {
  ALLOW_READONLY,
  ASK_DESTRUCTIVE,
  ASK_FILE_SYSTEM,
  ASK_NETWORK,
  ConfigurationError,
  defineTool,
  DENY_PRIVILEGED,
  PermissionPolicy,
  PermissionResult,
  ToolTag,
  type PermissionRequest,
  type PermissionRule,
} from '../../src/index.js';
import { fixture } from './helpers.js';

const rule = (
  name: string,
  result: PermissionResult,
  match: PermissionRule['match'],
  extra: Partial<PermissionRule> = {},
): PermissionRule => ({
  name,
  result,
  ...(match ? { match } : {}),
  reason: `because ${name}`,
  ...extra,
});

describe('PermissionPolicy evaluation', () => {
  const tool = defineTool({
    name: 'refund',
    parameters: { type: 'object' },
    metadata: { tags: ['destructive'], customTags: ['billing'] },
    execute: () => 0,
  });

  it('takes the first matching rule, in order', () => {
    const policy = new PermissionPolicy({
      rules: [rule('no', 'deny', () => false), rule('first', 'ask', () => true), rule('second', 'allow', () => true)],
    });
    const result = policy.evaluate(tool, {});
    expect(result.by).toBe('rule');
    expect(result.result).toBe('ask');
    expect(result.rule?.name).toBe('first');
  });

  it('falls back when nothing matches or there are no rules; the default fallback is deny', () => {
    expect(new PermissionPolicy({ rules: [] }).evaluate(tool, {})).toMatchObject({ result: 'deny', by: 'fallback' });
    expect(
      new PermissionPolicy({ rules: [rule('x', 'allow', () => false)], fallback: 'allow' }).evaluate(tool, {}),
    ).toMatchObject({ result: 'allow', by: 'fallback' });
    expect(new PermissionPolicy({ rules: [], fallback: PermissionResult.ASK }).evaluate(tool, {}).result).toBe('ask');
  });

  it('passes the tool and the parameters to match', () => {
    const match = vi.fn((_t, p: Readonly<Record<string, unknown>>) => p['amount'] === 5);
    const policy = new PermissionPolicy({ rules: [rule('amount', 'allow', match)] });
    expect(policy.evaluate(tool, { amount: 5 }).result).toBe('allow');
    expect(match).toHaveBeenCalledWith(tool, { amount: 5 });
  });

  it('denies and reports a rule whose match throws or answers a non-boolean', () => {
    const throwing = new PermissionPolicy({
      rules: [
        rule('boom', 'allow', () => {
          throw new Error('kaput');
        }),
      ],
      fallback: 'allow',
    });
    const result = throwing.evaluate(tool, {});
    expect(result).toMatchObject({ result: 'deny', by: 'rule_error' });
    expect(result.error).toContain('kaput');
    const truthy = new PermissionPolicy({
      rules: [rule('truthy', 'allow', (() => 'yes') as unknown as PermissionRule['match'])],
      fallback: 'allow',
    });
    expect(truthy.evaluate(tool, {})).toMatchObject({ result: 'deny', by: 'rule_error' });
  });

  it('skips rules whose selectors cannot match without calling match', () => {
    const skipped = vi.fn(() => true);
    const policy = new PermissionPolicy({
      rules: [
        rule('other_tool', 'deny', skipped, { tools: ['search'] }),
        rule('other_tag', 'deny', skipped, { tags: ['network'] }),
        rule('billing', 'allow', undefined, { tags: ['billing'] }),
      ],
    });
    expect(policy.evaluate(tool, {})).toMatchObject({ result: 'allow', by: 'rule' });
    expect(skipped).not.toHaveBeenCalled();
    expect(policy.candidates(tool).map((r) => r.name)).toEqual(['billing']);
  });

  it('selects by name in canonical form and requires both selectors when both are given', () => {
    const policy = new PermissionPolicy({
      rules: [
        rule('both', 'deny', undefined, { tools: ['REFUND'], tags: ['network'] }),
        rule('name', 'allow', undefined, { tools: ['ＲＥＦＵＮＤ'] }),
      ],
    });
    expect(policy.evaluate(tool, {}).rule?.name).toBe('name');
  });

  it('traces every rule with why it did or did not match', () => {
    const policy = new PermissionPolicy({
      rules: [
        rule('net', 'deny', undefined, { tags: ['network'] }),
        rule('small', 'allow', (_t, p) => Number(p['amount']) < 10),
        rule('destructive', 'ask', undefined, { tags: ['destructive'] }),
        rule('late', 'deny', () => true),
      ],
    });
    const { trace } = policy.evaluate(tool, { amount: 50 }, { trace: true });
    expect(trace?.map((t) => [t.rule, t.outcome])).toEqual([
      ['net', 'not_selected'],
      ['small', 'not_matched'],
      ['destructive', 'matched'],
      ['late', 'not_reached'],
    ]);
  });

  it('validates its options and rules', () => {
    expect(() => new PermissionPolicy({ rules: 'x' as unknown as PermissionRule[] })).toThrow(TypeError);
    expect(() => new PermissionPolicy({ rules: [], fallback: 'maybe' as PermissionResult })).toThrow(/fallback/);
    expect(() => new PermissionPolicy({ rules: [{ name: 'x', result: 'allow' }] })).toThrow(ConfigurationError);
    expect(
      () => new PermissionPolicy({ rules: [{ name: 'x', result: 'yes' as PermissionResult, match: () => true }] }),
    ).toThrow(/result/);
    expect(
      () => new PermissionPolicy({ rules: [rule('dup', 'allow', () => true), rule('dup', 'deny', () => true)] }),
    ).toThrow(/twice/);
    expect(() => new PermissionPolicy({ rules: [], handler: 5 as unknown as () => 'allow' })).toThrow(/handler/);
  });

  it('refuses a rule with a key it does not read (a foreign condition would leave the rule matching every call)', () => {
    // `when` is the policy file's condition; in a PermissionRule it would be ignored and the allow would cover
    // every refund, big ones too.
    const foreign = { name: 'small-refunds', tools: ['refund'], when: { amount: { lt: 100 } }, result: 'allow' };
    expect(() => new PermissionPolicy({ rules: [foreign as unknown as PermissionRule] })).toThrow(ConfigurationError);
    expect(() => new PermissionPolicy({ rules: [foreign as unknown as PermissionRule] })).toThrow(/unknown key "when"/);
    // The same rule with its condition where the gate reads it is taken.
    const kept = { name: foreign.name, tools: foreign.tools, result: foreign.result, match: () => true };
    expect(() => new PermissionPolicy({ rules: [kept as PermissionRule] })).not.toThrow();
  });
});

describe("a tool's tags", () => {
  it('are fixed once the tool is defined: a policy that found its rules by tag keeps deciding the same', () => {
    const tool = defineTool({
      name: 'refund',
      parameters: { type: 'object' },
      metadata: { tags: ['destructive'], customTags: ['billing'] },
      execute: () => 0,
    });
    const policy = new PermissionPolicy({
      rules: [
        rule('net', 'deny', undefined, { tags: ['network'] }),
        rule('billing', 'allow', undefined, { tags: ['billing'] }),
      ],
    });
    expect(policy.evaluate(tool, {}).rule?.name).toBe('billing');
    const { tags, customTags, allTags } = tool.metadata as unknown as {
      tags: Set<string>;
      customTags: Set<string>;
      allTags: Set<string>;
    };
    for (const set of [tags, customTags, allTags]) {
      expect(() => set.add('network')).toThrow(/fixed once it is defined; cannot add "network"/);
      expect(() => set.delete('billing')).toThrow(/cannot delete "billing"/);
      expect(() => set.clear()).toThrow(/cannot clear/);
    }
    expect([...allTags]).toEqual(['destructive', 'billing']);
    expect(allTags.has('billing') && tags.has('destructive') && customTags.size === 1).toBe(true);
    expect(policy.evaluate(tool, {}).rule?.name).toBe('billing');
  });
});

describe('built-in rules', () => {
  it('select by tag', async () => {
    const { registry, add } = fixture();
    add('write_file', { tags: [ToolTag.FILE_SYSTEM] });
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [ALLOW_READONLY, DENY_PRIVILEGED, ASK_DESTRUCTIVE, ASK_NETWORK, ASK_FILE_SYSTEM] }),
    );
    const asked: string[] = [];
    registry.setPermissionHandler((req) => {
      asked.push(`${req.toolName}:${req.ruleName}`);
      return 'deny';
    });
    const d = async (name: string, args: object = {}) => registry.decide({ name, arguments: args });
    expect(await d('search', { query: 'x' })).toMatchObject({ effect: 'allow', rule: 'allow_readonly' });
    expect(await d('sudo')).toMatchObject({ effect: 'deny', rule: 'deny_privileged', stage: 'policy' });
    await d('refund');
    await d('fetch_url');
    await d('write_file');
    expect(asked).toEqual(['refund:ask_destructive', 'fetch_url:ask_network', 'write_file:ask_file_system']);
  });
});

describe('handlers', () => {
  const askAll = new PermissionPolicy({ rules: [rule('ask_all', 'ask', () => true)] });

  it.each([
    ['a sync function', (_r: PermissionRequest) => 'allow' as const],
    ['an async function', async (_r: PermissionRequest) => 'allow' as const],
    ['an object with handle()', { handle: (_r: PermissionRequest) => 'allow' as const }],
    ['an object with async handle()', { handle: async (_r: PermissionRequest) => 'allow' as const }],
  ])('accepts %s', async (_what, handler) => {
    const { registry, ran } = fixture();
    registry.setPermissionPolicy(askAll);
    registry.setPermissionHandler(handler);
    const result = await registry.invoke('refund', { amount: 3 });
    expect(result.status).toBe('ok');
    expect(result.decision).toMatchObject({ effect: 'allow', by: 'handler', asked: 'registry' });
    expect(ran).toHaveLength(1);
  });

  it('gives the handler the tool name, validated parameters, reason, rule name and metadata', async () => {
    const { registry } = fixture();
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [rule('ask_search', 'ask', () => true)] }));
    let seen: PermissionRequest | undefined;
    registry.setPermissionHandler((req) => {
      seen = req;
      return 'deny';
    });
    await registry.invoke(
      'search',
      { query: '  padded  ' },
      { agent: 'concierge', tenant: { id: 'acme' }, runId: 'r1' },
    );
    expect(seen).toMatchObject({
      toolName: 'search',
      parameters: { query: 'padded' },
      reason: 'because ask_search',
      ruleName: 'ask_search',
      agent: 'concierge',
      tenant: 'acme',
      runId: 'r1',
    });
    expect(seen?.metadata.tags.has('read_only')).toBe(true);
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('no');
      },
      'handler_error',
    ],
    ['rejects', () => Promise.reject(new Error('no')), 'handler_error'],
    ['answers ask', () => 'ask', 'handler_invalid'],
    ['answers garbage', () => 'yes please', 'handler_invalid'],
    ['answers undefined', () => undefined, 'handler_invalid'],
    ['times out', () => new Promise(() => undefined), 'handler_timeout'],
  ])('denies when the handler %s', async (_what, handler, by) => {
    const { registry, ran } = fixture({ handlerTimeoutMs: 30 });
    registry.setPermissionPolicy(askAll);
    registry.setPermissionHandler(handler as unknown as () => 'allow');
    const result = await registry.invoke('refund', {});
    expect(result.status).toBe('refused');
    expect(result.decision).toMatchObject({ effect: 'deny', stage: 'handler', by });
    expect(ran).toHaveLength(0);
  });

  it('resolves ask with the policy handler first, then the registry handler, then the fallback', async () => {
    const { registry } = fixture();
    const calls: string[] = [];
    registry.setPermissionHandler(() => {
      calls.push('registry');
      return 'allow';
    });
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [rule('ask', 'ask', () => true)], handler: () => (calls.push('policy'), 'deny') }),
    );
    expect((await registry.invoke('refund', {})).decision).toMatchObject({ effect: 'deny', asked: 'policy' });
    registry.setPermissionPolicy(askAll);
    expect((await registry.invoke('refund', {})).decision).toMatchObject({ effect: 'allow', asked: 'registry' });
    expect(calls).toEqual(['policy', 'registry']);
    registry.removePermissionHandler();
    expect((await registry.invoke('refund', {})).decision).toMatchObject({
      effect: 'deny',
      stage: 'policy',
      by: 'no_handler',
    });
  });

  it("the registry's fallback goes with its handler: removing the handler restores deny (issue 22)", async () => {
    const { registry, ran } = fixture();
    registry.setPermissionPolicy(askAll);
    registry.setPermissionHandler(() => 'deny', { fallback: 'allow' });
    registry.removePermissionHandler();
    // Removing the handler removes the fallback set with it: an ask with no one to answer it is denied.
    expect((await registry.invoke('refund', {})).decision).toMatchObject({ effect: 'deny', by: 'no_handler' });
    expect(ran).toHaveLength(0);
    expect(() => registry.setPermissionHandler(() => 'allow', { fallback: 'sure' as PermissionResult })).toThrow(
      TypeError,
    );
  });
});
