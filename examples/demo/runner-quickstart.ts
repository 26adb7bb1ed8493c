// The AgentRunner quick start of docs/runner.md (section "Quick start"), kept here so it is type-checked and run.
import {
  AgentRunner,
  PermissionPolicy,
  PermissionResult,
  ScriptedModel,
  ToolRegistry,
  defineTool,
  type RunState,
} from '../../src/index.js';

const registry = new ToolRegistry();
registry.register(
  defineTool({
    name: 'refund',
    description: 'Refund an order',
    parameters: {
      type: 'object',
      properties: { order: { type: 'string' }, amount: { type: 'number' } },
      required: ['order', 'amount'],
    },
    execute: (args) => `refunded ${String(args['amount'])}`,
  }),
);
registry.setPermissionPolicy(
  new PermissionPolicy({
    version: 'billing-v7', // pin it: an approval is bound to the policy version
    rules: [
      {
        name: 'ask_big_refunds',
        tools: ['refund'],
        match: (_tool, p) => Number(p['amount']) > 100,
        result: PermissionResult.ASK,
      },
    ],
    fallback: PermissionResult.ALLOW,
  }),
);

const model = new ScriptedModel([
  { toolCalls: [{ name: 'refund', arguments: { order: 'A-1', amount: 250 } }] },
  { text: 'Refunded.' },
]);
const runner = new AgentRunner({
  registry,
  model,
  tenants: (id) => (id === 'acme' ? { tools: ['refund'], maxToolCalls: 20 } : undefined),
  scopes: { 'billing:write': ['refund'] },
  secret: 'use-a-real-key-from-your-secret-store',
  handler: () => 'pending', // a human answers later, possibly in another process
});

export async function quickstart(): Promise<string> {
  const agent = { name: 'concierge', tools: ['search', 'refund'] };
  const result = await runner.run(agent, 'Refund order A-1', { tenant: 'acme', caller: { scopes: ['billing:write'] } });
  if (result.status !== 'paused') return result.status;
  const state = JSON.stringify(result.state); // store it anywhere
  const decision = runner.answer(result.pending[0]!, 'allow', { scope: 'run' });
  const resumed = await runner.resume(JSON.parse(state) as RunState, [decision]);
  return `${resumed.status}: ${resumed.output ?? ''}`; // 'completed: Refunded.'
}
