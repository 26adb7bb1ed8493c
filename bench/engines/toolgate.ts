/**
 * toolgate, as the gate runs it for one call: the synchronous part of the one path (src/gate.ts
 * `precheck`): canonical name → tool look-up → arguments (already an object) → JSON Schema validation
 * (Ajv, compiled once per tool) → the allowlist of this dispatch (agent ∩ tenant ∩ caller, resolved once
 * and cached for frozen layers) → the policy's selector-indexed first-match rules. No handler (no rule
 * answers ask), no execution, no events.
 */
import { previewCall } from '../../src/gate/dispatch.js';
import type { GateContext, GateEnvironment } from '../../src/contracts/gate.js';
import type { Precheck } from '../../src/gate/precheck.js';
import { environmentOf } from '../../src/gate/environment.js';
import { defineTool, PermissionPolicy, ToolRegistry, type PermissionRule } from '../../src/index.js';
import { type JsonSchema } from '../../src/types.js';
import type { Because, Condition, Scenario } from '../scenario.js';
import type { Engine, Verdict } from './engine.js';

/** The arguments' schema every scenario tool declares. */
export const ARGUMENTS_SCHEMA: JsonSchema = {
  type: 'object',
  properties: { amount: { type: 'integer', minimum: 0 }, mode: { type: 'string', enum: ['read', 'write', 'admin'] } },
  required: ['amount', 'mode'],
};

function match(condition: Condition): PermissionRule['match'] {
  switch (condition.kind) {
    case 'none':
      return undefined;
    case 'amount_above': {
      const limit = condition.value;
      return (_tool, params) => (params['amount'] as number) > limit;
    }
    case 'mode_is': {
      const mode = condition.value;
      return (_tool, params) => params['mode'] === mode;
    }
  }
}

/** The scenario as a registry (tools with a no-op `execute`, synchronous or async), its policy and the dispatch context. */
export function toolgateSetup(
  scenario: Scenario,
  options: { readonly asyncTools?: boolean } = {},
): { registry: ToolRegistry; context: GateContext } {
  const registry = new ToolRegistry();
  const execute = options.asyncTools ? async (): Promise<undefined> => undefined : (): undefined => undefined;
  for (const tool of scenario.tools) {
    registry.register(
      defineTool({
        name: tool.name,
        parameters: ARGUMENTS_SCHEMA,
        metadata: { tags: tool.tags, customTags: tool.customTags },
        execute,
      }),
    );
  }
  const rules: PermissionRule[] = scenario.rules.map((r) => {
    const m = match(r.condition);
    return {
      name: r.id,
      result: r.effect,
      ...(r.selector.kind === 'name' ? { tools: [r.selector.name] } : { tags: [r.selector.tag] }),
      ...(m ? { match: m } : {}),
    };
  });
  registry.setPermissionPolicy(new PermissionPolicy({ rules, fallback: 'deny' }));
  const context: GateContext = {
    agent: { name: scenario.agent, tools: scenario.declared },
    tenant: { id: scenario.tenantId, tools: scenario.tenant },
    caller: { id: scenario.callerId, scopes: scenario.caller },
  };
  return { registry, context };
}

function sync(pre: Precheck | Promise<Precheck>): Precheck {
  if (pre instanceof Promise)
    throw new Error('toolgate engine: precheck went asynchronous; the bench expects a synchronous schema');
  return pre;
}

export function toolgateEngine(scenario: Scenario): Engine {
  const { registry, context } = toolgateSetup(scenario);
  const env: GateEnvironment = environmentOf(registry);
  return {
    name: 'toolgate',
    explains: 'first-match',
    explain(call): Verdict {
      const pre = sync(previewCall(call, context, env));
      if (pre.kind !== 'decided')
        throw new Error(`toolgate engine: ${call.name} was asked; the scenario has no ask rules`);
      const d = pre.decision;
      let because: Because;
      if (d.effect === 'deny' && (d.stage === 'lookup' || d.stage === 'allowlist')) because = `layer:${d.layer}`;
      else if (d.by === 'rule') because = `rule:${d.rule!}`;
      else if (d.by === 'fallback') because = 'fallback';
      else throw new Error(`toolgate engine: unexpected decision for ${call.name}: ${d.stage}/${d.by}: ${d.reason}`);
      return { effect: d.effect, because: [because] };
    },
    run(calls, from, count) {
      const mask = calls.length - 1;
      let allowed = 0;
      for (let k = 0; k < count; k++) {
        const pre = previewCall(calls[(from + k) & mask]!, context, env) as Precheck;
        if (pre.kind === 'decided' && pre.decision.effect === 'allow') allowed++;
      }
      return allowed;
    },
  };
}
