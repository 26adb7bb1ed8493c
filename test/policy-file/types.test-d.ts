import { expectTypeOf, test } from 'vitest';
import type {
  Agent,
  AgentRunner,
  AgentRunnerOptions,
  GateContext,
  PermissionPolicy,
  TenantLimits,
} from '../../src/index.js';
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
  expectTypeOf<PolicyAgent>().toMatchTypeOf<Agent>();
  expectTypeOf<PolicyAgent['peers']>().toMatchTypeOf<readonly PolicyAgent[]>();
  expectTypeOf<PolicyTenantLimits>().toMatchTypeOf<TenantLimits>();
  expectTypeOf<PolicyTenantLimits['tools']>().toMatchTypeOf<readonly string[] | undefined>();
  expectTypeOf<Explanation['decision']['effect']>().toEqualTypeOf<'allow' | 'deny' | 'ask'>();
  expectTypeOf<LintReport['findings'][number]['severity']>().toEqualTypeOf<'error' | 'warning'>();
});

test("a PolicySet's agent graph, tenants and scopes go to the runner as they are", () => {
  const set = {} as PolicySet;
  const runner = {} as AgentRunner;
  expectTypeOf(runner.run).toBeCallableWith(set.agent('concierge'), 'go', { tenant: 'acme' });
  expectTypeOf<PolicySet['scopes']>().toEqualTypeOf<NonNullable<AgentRunnerOptions['scopes']>>();
  expectTypeOf<(id: string) => ReturnType<PolicySet['tenantLimits']>>().toMatchTypeOf<
    Extract<NonNullable<AgentRunnerOptions['tenants']>, (id: string) => unknown>
  >();
});
