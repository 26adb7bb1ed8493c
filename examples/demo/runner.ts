/**
 * The runner part of `npm run demo`: a concierge agent for two tenants, a caller with narrow scopes, a
 * delegation to a peer, a refusal that ends a loop, and a pause for approval resumed in a fresh runner.
 *
 * Standalone: npx tsx examples/demo/runner.ts
 */
import { pathToFileURL } from 'node:url';
import {
  ALLOW_READONLY,
  AgentRunner,
  PermissionPolicy,
  PermissionResult,
  ToolRegistry,
  ToolTag,
  defineTool,
  type Agent,
  type RunResult,
  type RunState,
  type TenantLimits,
} from '../../src/index.js';
import { InMemoryApprovalStore, ScriptedModel } from '../../src/runner/index.js';

const pricing: Agent = { name: 'pricing', tools: ['quote', 'discount'], instructions: 'Price items.' };
const concierge: Agent = { name: 'concierge', tools: ['search', 'quote', 'refund', 'agent:pricing'], peers: [pricing] };

const plans: Record<string, TenantLimits> = {
  acme: { tools: ['search', 'quote', 'refund', 'agent:pricing'], maxToolCalls: 20 },
  freeplan: { tools: ['search', 'quote', 'agent:pricing'], maxToolCalls: 10 },
};

/** Capability scopes of the caller, mapped to tool names at the boundary. */
const scopes = { 'catalog:read': ['search', 'quote', 'agent:pricing'], 'billing:write': ['refund'] };

const SECRET = 'demo-secret-please-use-a-real-key';

export function shopRegistry(refunds: string[]): ToolRegistry {
  const registry = new ToolRegistry();
  registry.register(
    defineTool({
      name: 'search',
      description: 'Search the catalogue',
      parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      metadata: { tags: [ToolTag.READ_ONLY] },
      execute: (a) => `2 lamps match ${String(a['query'])}`,
    }),
  );
  registry.register(
    defineTool({
      name: 'quote',
      description: 'Price an item',
      parameters: { type: 'object', properties: { item: { type: 'string' } }, required: ['item'] },
      metadata: { tags: [ToolTag.READ_ONLY] },
      execute: (a) => `${String(a['item'])}: 49 EUR`,
    }),
  );
  registry.register(
    defineTool({
      name: 'discount',
      description: 'Apply a discount',
      parameters: { type: 'object', properties: { percent: { type: 'number' } }, required: ['percent'] },
      execute: () => 'discounted',
    }),
  );
  registry.register(
    defineTool({
      name: 'refund',
      description: 'Refund an order',
      parameters: {
        type: 'object',
        properties: { order: { type: 'string' }, amount: { type: 'number' } },
        required: ['order', 'amount'],
      },
      metadata: { tags: [ToolTag.DESTRUCTIVE] },
      execute: (a) => {
        refunds.push(`${String(a['order'])}:${String(a['amount'])}`);
        return `refunded ${String(a['amount'])} on ${String(a['order'])}`;
      },
    }),
  );
  registry.setPermissionPolicy(
    new PermissionPolicy({
      version: 'shop-policy-3',
      rules: [
        ALLOW_READONLY,
        {
          name: 'ask_refunds_over_100',
          tools: ['refund'],
          match: (_t, p) => Number(p['amount']) > 100,
          result: PermissionResult.ASK,
          reason: 'refunds over 100 need a human',
        },
      ],
      fallback: PermissionResult.ALLOW,
    }),
  );
  return registry;
}

export function script(): ScriptedModel {
  const last = (messages: readonly { role: string }[]): string => {
    const m = messages.filter((x) => x.role === 'tool').at(-1) as { content: string } | undefined;
    return m?.content ?? '';
  };
  return new ScriptedModel({
    concierge: [
      (r) => {
        const input = (r.messages[0] as { content: string }).content;
        if (input.startsWith('price'))
          return { toolCalls: [{ name: 'agent:pricing', arguments: { input: 'price the brass lamp' } }] };
        return { toolCalls: [{ name: 'refund', arguments: { order: 'A-1042', amount: 250 } }] };
      },
      (r) => ({ text: `concierge says: ${last(r.messages)}` }),
    ],
    pricing: [
      { toolCalls: [{ name: 'quote', arguments: { item: 'brass lamp' } }] },
      (r) => ({ text: `pricing says: ${last(r.messages)}` }),
    ],
  });
}

function outcome(result: RunResult): string {
  const extra =
    result.status === 'completed'
      ? ` → ${JSON.stringify(result.output)}`
      : result.status === 'failed'
        ? ` → ${result.error.message}`
        : result.status === 'refusal_loop'
          ? ` → ${result.decision.tool} refused ${result.refusals} times`
          : result.status === 'paused'
            ? ` → waiting on ${result.pending.map((p) => `${p.toolName}(${JSON.stringify(p.parameters)})`).join(', ')}`
            : '';
  return `status ${result.status} (attempts ${result.attempts}, refusals ${result.refusals})${extra}`;
}

export async function runnerDemo(print: (line: string) => void): Promise<void> {
  const refunds: string[] = [];
  const store = new InMemoryApprovalStore();
  const model = script();
  const runner = new AgentRunner({
    registry: shopRegistry(refunds),
    model,
    tenants: (id) => plans[id],
    scopes,
    approvals: store,
    secret: SECRET,
    handler: () => 'pending',
  });
  runner.on('tool_refused', (e) =>
    print(
      `  ✗ refused ${e.decision.tool} for ${e.path.join(' > ')} (${e.decision.stage}${e.decision.layer ? `: ${e.decision.layer}` : ''})`,
    ),
  );
  runner.on('tool_decided', (e) => {
    if (e.decision.effect === 'allow')
      print(`  ✓ ${e.path.join(' > ')} may call ${e.decision.tool} (${e.decision.by})`);
  });

  print('AgentRunner — one concierge, two tenants, one gate per dispatch');
  print('');
  print('1. acme, caller scopes [catalog:read]: the concierge delegates pricing to a peer');
  print('   (pricing declares discount, which the concierge does not: the peer is held to the intersection)');
  print(
    `   ${outcome(await runner.run(concierge, 'price the brass lamp', { tenant: 'acme', caller: { id: 'ana', scopes: ['catalog:read'] } }))}`,
  );
  for (const agent of ['concierge', 'pricing']) {
    print(
      `   ${agent} was shown: ${
        model.requests
          .find((r) => r.agent === agent)
          ?.tools.map((t) => t.name)
          .join(', ') ?? ''
      }`,
    );
  }
  print('');

  print('2. freeplan, caller scopes [catalog:read, billing:write]: the plan has no refunds');
  print(
    `   ${outcome(await runner.run(concierge, 'refund order A-1042', { tenant: 'freeplan', caller: { id: 'bo', scopes: ['catalog:read', 'billing:write'] } }))}`,
  );
  print('');

  print("3. a model that keeps asking for a refused tool (onRefusal 'continue'): a refusal loop");
  const looping = new AgentRunner({
    registry: shopRegistry(refunds),
    model: new ScriptedModel([{ toolCalls: [{ name: 'refund', arguments: { order: 'A-1042', amount: 20 } }] }], {
      whenDone: 'repeat',
    }),
    tenants: (id) => plans[id],
    scopes,
    onRefusal: 'continue',
  });
  print(
    `   ${outcome(await looping.run(concierge, 'refund order A-1042', { tenant: 'freeplan', caller: { scopes: ['billing:write'] } }))}`,
  );
  print('');

  print('4. acme, caller scopes [billing:write]: a refund over 100 pauses for a human');
  const result = await runner.run(concierge, 'refund order A-1042', {
    tenant: 'acme',
    caller: { id: 'cy', scopes: ['billing:write'] },
  });
  print(`   ${outcome(result)}`);
  if (result.status !== 'paused') return;
  const wire = JSON.stringify(result.state);
  print(`   the RunState is ${wire.length} bytes of signed JSON; a supervisor approves it elsewhere`);
  const decision = runner.answer(result.pending[0]!, 'allow');
  const fresh = new AgentRunner({
    registry: shopRegistry(refunds),
    model: script(),
    tenants: (id) => plans[id],
    scopes,
    approvals: store,
    secret: SECRET,
  });
  const resumed = await fresh.resume(JSON.parse(wire) as RunState, [decision]);
  print(`   resumed in a fresh runner: ${outcome(resumed)}`);
  const twice = await fresh.resume(JSON.parse(wire) as RunState, [decision]);
  print(
    `   resumed the same state again: ${twice.status}; refunds executed in all: ${refunds.length} (${refunds.join(', ')})`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runnerDemo((line) => console.log(line));
}
