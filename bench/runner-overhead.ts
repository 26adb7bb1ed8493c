/**
 * What a run loop adds to a bare registry.invoke: 500 runs of 10 model turns with one allowed call each,
 * against 5000 registry.invoke calls, both through the same gate. Three rounds each (the first is warm-up).
 *
 *   npx tsx bench/runner-overhead.ts
 */
import {
  ALLOW_READONLY,
  AgentRunner,
  PermissionPolicy,
  ToolRegistry,
  ToolTag,
  defineTool,
  type Model,
} from '../src/index.js';

const registry = new ToolRegistry();
registry.register(
  defineTool({
    name: 'search',
    parameters: { type: 'object', properties: { q: { type: 'string' } } },
    metadata: { tags: [ToolTag.READ_ONLY] },
    execute: () => 'ok',
  }),
);
registry.setPermissionPolicy(new PermissionPolicy({ rules: [ALLOW_READONLY] }));
const agent = { name: 'a', tools: ['search'] };
const model: Model = {
  generate: (r) =>
    r.messages.length < 20
      ? { toolCalls: [{ id: `c${r.messages.length}`, name: 'search', arguments: { q: 'x' } }] }
      : { text: 'done' },
};
const runner = new AgentRunner({ registry, model, tenants: () => ({ tools: ['search'] }) });
const context = {
  agent: { name: 'a', tools: Object.freeze(['search']) },
  tenant: { id: 't', tools: Object.freeze(['search']) },
};

async function main(): Promise<void> {
  for (let round = 1; round <= 3; round++) {
    let t0 = performance.now();
    let calls = 0;
    for (let k = 0; k < 500; k++) calls += (await runner.run(agent, 'go')).attempts;
    const perTurn = ((performance.now() - t0) * 1000) / calls;
    t0 = performance.now();
    for (let k = 0; k < 5000; k++) await registry.invoke('search', { q: 'x' }, context);
    const perInvoke = ((performance.now() - t0) * 1000) / 5000;
    console.log(
      `round ${round}: runner ${perTurn.toFixed(1)} µs per model turn + call; registry.invoke ${perInvoke.toFixed(1)} µs per call`,
    );
  }
}

await main();
