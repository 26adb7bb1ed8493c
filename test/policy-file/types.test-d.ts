import { expectTypeOf, test } from 'vitest';
import type { GateContext, PermissionPolicy } from '../../src/index.js';
import type {
  Explanation,
  LintReport,
  PolicyAgent,
  PolicyIssue,
  PolicyParseResult,
  PolicySet,
  PolicyTenantLimits,
} from '../../src/policy-file/index.js';
import { parsePolicy } from '../../src/policy-file/index.js';

test('a parse result is the policy or the issues, never both', () => {
  const result = parsePolicy('version: 1');
  expectTypeOf(result).toEqualTypeOf<PolicyParseResult>();
  if (result.ok) {
    expectTypeOf(result.policy).toEqualTypeOf<PolicySet>();
    expectTypeOf(result.issues).toEqualTypeOf<undefined>();
  } else {
    expectTypeOf(result.issues).toEqualTypeOf<readonly PolicyIssue[]>();
    expectTypeOf(result.policy).toEqualTypeOf<undefined>();
  }
});

test('a policy set feeds the registry, the gate and the runner', () => {
  expectTypeOf<PolicySet['policy']>().toEqualTypeOf<PermissionPolicy>();
  expectTypeOf<ReturnType<PolicySet['context']>>().toEqualTypeOf<GateContext>();
  expectTypeOf<PolicyAgent>().toMatchTypeOf<{
    readonly name: string;
    readonly tools: readonly string[];
    readonly peers: readonly string[];
  }>();
  expectTypeOf<PolicyTenantLimits>().toMatchTypeOf<{
    readonly tools?: readonly string[];
    readonly maxIterations?: number;
    readonly maxToolCalls?: number;
    readonly maxCost?: number;
  }>();
  expectTypeOf<Explanation['decision']['effect']>().toEqualTypeOf<'allow' | 'deny' | 'ask'>();
  expectTypeOf<LintReport['findings'][number]['severity']>().toEqualTypeOf<'error' | 'warning'>();
});
