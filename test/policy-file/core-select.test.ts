// The core's `select` rule selector, added for policy-file globs: asked once per tool, kept with the
// tool's candidate list, and failing closed.
import { describe, expect, it } from 'vitest';
import { ConfigurationError, defineTool, PermissionPolicy, type Tool } from '../../src/index.js';

const tool = (name: string): Tool => defineTool({ name, parameters: { type: 'object' }, execute: () => null });

describe('PermissionRule.select', () => {
  it('is asked once per tool, not once per call', () => {
    let asked = 0;
    const policy = new PermissionPolicy({
      rules: [{ name: 'mcp', result: 'deny', select: (t) => (asked++, t.name.startsWith('mcp:')) }],
      fallback: 'allow',
    });
    const a = tool('mcp:a');
    const b = tool('b');
    for (let i = 0; i < 5; i++) {
      expect(policy.evaluate(a, {}).result).toBe('deny');
      expect(policy.evaluate(b, {}).result).toBe('allow');
    }
    expect(asked).toBe(2);
  });

  it('combines with tags and match, and shows in the trace', () => {
    const policy = new PermissionPolicy({
      rules: [
        {
          name: 'r',
          result: 'allow',
          tags: ['read_only'],
          select: (t) => t.name !== 'x',
          match: (_t, p) => p['ok'] === true,
        },
      ],
    });
    const ro = (name: string): Tool =>
      defineTool({ name, parameters: { type: 'object' }, metadata: { tags: ['read_only'] }, execute: () => null });
    expect(policy.evaluate(ro('y'), { ok: true }).result).toBe('allow');
    expect(policy.evaluate(ro('x'), { ok: true }).by).toBe('fallback');
    expect(policy.evaluate(tool('y'), { ok: true }).by).toBe('fallback');
    const traced = policy.evaluate(ro('x'), {}, { trace: true });
    expect(traced.trace?.[0]).toMatchObject({
      outcome: 'not_selected',
      detail: 'selects tags read_only and its select() predicate',
    });
  });

  it('a select that throws or answers a non-boolean denies the call, even for an allow rule', () => {
    const policy = new PermissionPolicy({
      rules: [
        {
          name: 'broken',
          result: 'allow',
          select: () => {
            throw new Error('boom');
          },
        },
        { name: 'odd', result: 'allow', select: () => 'yes' as unknown as boolean },
      ],
      fallback: 'allow',
    });
    const first = policy.evaluate(tool('a'), {});
    expect(first).toMatchObject({ result: 'deny', by: 'rule_error' });
    expect(first.error).toMatch(/select threw: boom/);
    const lone = new PermissionPolicy({
      rules: [{ name: 'odd', result: 'allow', select: () => 'yes' as unknown as boolean }],
    });
    expect(lone.evaluate(tool('a'), {}).error).toMatch(/select returned "yes"; expected a boolean/);
  });

  it('must be a function', () => {
    expect(() => new PermissionPolicy({ rules: [{ name: 'r', result: 'deny', select: 5 as never }] })).toThrow(
      ConfigurationError,
    );
  });
});
