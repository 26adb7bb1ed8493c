/**
 * What the runner keeps from one run to the next of the same objects (issue 25: a run's fixed costs): an agent's
 * spec is taken again only while its declaration is the same, the ledger and tally keys are the texts they
 * always were, and each runner on memory stores signs with a key of its own.
 */
import { expect, it } from 'vitest';
import { AgentRunner, PermissionPolicy, ToolRegistry, defineTool } from '../../src/index.js';
import { memoryStores } from '../../src/stores/index.js';
import { randomKey } from '../../src/crypto.js';
import { ScriptedModel } from '../../src/runner/index.js';

function setup() {
  const ran: string[] = [];
  const registry = new ToolRegistry();
  for (const name of ['search', 'delete'])
    registry.register(defineTool({ name, parameters: { type: 'object' }, execute: () => void ran.push(name) }));
  registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow' }));
  return { ran, registry };
}

const callOf = (name: string) =>
  new ScriptedModel([{ toolCalls: [{ id: 'c', name, arguments: {} }] }, { text: 'done' }]);

it('an agent whose tools change in place between runs is judged on what it declares now', async () => {
  const { ran, registry } = setup();
  const agent = { name: 'a', tools: ['search', 'delete'] };
  const first = await new AgentRunner({ registry, model: callOf('delete') }).run(agent, 'go');
  expect(first.status).toBe('completed');
  expect(ran).toEqual(['delete']);
  // Narrowed in place: the same object, a shorter declaration.
  agent.tools.length = 1;
  const second = await new AgentRunner({ registry, model: callOf('delete') }).run(agent, 'go');
  expect(second.decisions.at(-1)).toMatchObject({ effect: 'deny', stage: 'allowlist' });
  expect(ran).toEqual(['delete']);
  // A colliding declaration added in place is refused before the run starts, as it is on a fresh object.
  agent.tools.push('SEARCH');
  await expect(new AgentRunner({ registry, model: callOf('search') }).run(agent, 'go')).rejects.toThrow(/search/i);
  expect(ran).toEqual(['delete']);
});

it('an agent whose peers or instructions change between runs gets a new spec', async () => {
  const { registry } = setup();
  const helper = { name: 'helper', tools: ['search'] };
  const agent: { name: string; tools: string[]; peers?: (typeof helper)[]; instructions?: string } = {
    name: 'a',
    // The peer's tool is declared from the start: only the peers and the instructions change below.
    tools: ['search', 'agent:helper'],
  };
  const seen: string[][] = [];
  const model = {
    generate: (request: { tools: readonly { name: string }[]; instructions: string | null }) => {
      seen.push([request.instructions ?? '-', ...request.tools.map((t) => t.name)]);
      return { text: 'done' };
    },
  };
  const runner = new AgentRunner({ registry, model });
  await runner.run(agent, 'go');
  agent.peers = [helper];
  agent.instructions = 'be brief';
  await runner.run(agent, 'go');
  expect(seen).toEqual([
    ['-', 'search'],
    ['be brief', 'search', 'agent:helper'],
  ]);
});

it('ledger and tally keys are the JSON texts of the run identity, as stored by earlier versions', async () => {
  const { registry } = setup();
  const stores = memoryStores();
  const runner = new AgentRunner({
    registry,
    model: new ScriptedModel([
      { toolCalls: [{ id: 'c"1', name: 'search', arguments: {} }] },
      { toolCalls: [{ id: 'c2', name: 'search', arguments: {} }] },
      { text: 'done' },
    ]),
    stores,
    secret: 'test-secret-with-enough-bytes-0123456789',
  });
  await runner.run({ name: 'a', tools: ['search'] }, 'go', {
    runId: 'r\u2028',
    tenant: 't',
    caller: { id: 'u' },
  });
  const keys = (await stores.ledger.list()).map((row) => row.key).sort();
  expect(keys).toEqual(
    [JSON.stringify(['r\u2028', 't', 'u', 'a', 0, 'c"1']), JSON.stringify(['r\u2028', 't', 'u', 'a', 1, 'c2'])].sort(),
  );
});

it('randomKey gives distinct 32-byte keys across pool refills', () => {
  const keys = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const key = randomKey();
    expect(key).toBeInstanceOf(Uint8Array);
    expect(key.length).toBe(32);
    keys.add(Buffer.from(key).toString('hex'));
  }
  expect(keys.size).toBe(200);
  // A key handed out is the caller's own copy: changing it changes no later key.
  const a = randomKey();
  a.fill(0);
  expect(Buffer.from(randomKey()).equals(Buffer.alloc(32))).toBe(false);
});
