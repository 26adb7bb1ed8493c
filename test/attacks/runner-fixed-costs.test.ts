/**
 * Attacks on 5a645f6 (issue 25, a run's fixed costs), end to end through AgentRunner (all held):
 * - a peer-less agent (the root, or a leaf peer reached by delegation) is handed the registry itself: it still
 *   reaches nothing beyond agent ∩ tenant ∩ caller, narrowed at each hop, and names no `agent:<x>` tool;
 * - the frame's last view (`frame.view`) is never another run's: one runner, runs of two tenants / callers
 *   interleaved, a plan replaced or changed in place between turns, below the root too;
 * - the tally key (`run.keys`) is per run: same run id under another tenant or caller spends its own budget,
 *   a resumed state spends the same one;
 * - runners on their own memory stores sign with keys of their own (a state of one is refused by another),
 *   and hashOf (crypto.hash) is createHash's digest for non-ASCII, empty, NUL and lone-surrogate text.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AgentRunner,
  PermissionPolicy,
  RunStateError,
  ToolRegistry,
  defineTool,
  type Agent,
  type RunState,
} from '../../src/index.js';
import { canonicalJson, hashOf } from '../../src/crypto.js';
import { ScriptedModel } from '../../src/runner/index.js';
import { memoryStores } from '../../src/stores/index.js';

function setup() {
  const ran: string[] = [];
  const registry = new ToolRegistry();
  for (const name of ['search', 'delete', 'sudo'])
    registry.register(defineTool({ name, parameters: { type: 'object' }, execute: () => void ran.push(name) }));
  registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow' }));
  return { ran, registry };
}
const calls = (...names: string[]) =>
  new ScriptedModel([
    ...names.map((name, i) => ({ toolCalls: [{ id: `c${i}`, name, arguments: {} }] })),
    { text: 'done' },
  ]);

describe('attack: a peer-less agent handed the registry itself', () => {
  it('the root reaches no tool outside agent ∩ tenant ∩ caller, nor an agent:<x> tool', async () => {
    for (const [tool, tenants, scopes] of [
      ['sudo', { t: { tools: ['search', 'delete'] } }, null],
      ['delete', { t: { tools: ['search'] } }, null],
      ['delete', { t: {} }, ['search']],
      ['agent:helper', { t: {} }, null],
    ] as const) {
      const { ran, registry } = setup();
      const runner = new AgentRunner({ registry, model: calls(tool), tenants, onRefusal: 'continue' });
      const r = await runner.run({ name: 'a', tools: ['search', 'delete'] }, 'go', {
        tenant: 't',
        caller: scopes === null ? {} : { id: 'u', scopes: [...scopes] },
      });
      expect(ran).toEqual([]);
      expect(r.decisions.at(-1)).toMatchObject({ effect: 'deny' });
    }
  });

  it('a leaf peer (no peers of its own) gets only what the root and each hop declare', async () => {
    const { ran, registry } = setup();
    const leaf: Agent = { name: 'leaf', tools: ['search', 'delete', 'sudo', 'agent:mid'] };
    const mid: Agent = { name: 'mid', tools: ['search', 'delete', 'agent:leaf', 'agent:mid'], peers: [leaf] };
    const root: Agent = { name: 'root', tools: ['search', 'sudo', 'agent:mid', 'agent:leaf'], peers: [mid] };
    const model = new ScriptedModel({
      root: [{ toolCalls: [{ id: 'r', name: 'agent:mid', arguments: { input: 'x' } }] }, { text: 'root done' }],
      mid: [{ toolCalls: [{ id: 'm', name: 'agent:leaf', arguments: { input: 'y' } }] }, { text: 'mid done' }],
      // In the leaf: delete (root lacks it), sudo (mid lacks it), agent:mid (leaf has no peers), search.
      leaf: [
        {
          toolCalls: [
            { id: 'l1', name: 'delete', arguments: {} },
            { id: 'l2', name: 'sudo', arguments: {} },
            { id: 'l3', name: 'agent:mid', arguments: { input: 'z' } },
            { id: 'l4', name: 'search', arguments: {} },
          ],
        },
        { text: 'leaf done' },
      ],
    });
    const r = await new AgentRunner({ registry, model, onRefusal: 'continue' }).run(root, 'go');
    expect(r.status).toBe('completed');
    expect(ran).toEqual(['search']);
    const leafDecisions = r.decisions.filter((d) => d.agent === 'leaf');
    expect(leafDecisions.map((d) => [d.tool, d.effect])).toEqual([
      ['delete', 'deny'],
      ['sudo', 'deny'],
      ['agent:mid', 'deny'],
      ['search', 'allow'],
    ]);
  });

  it('a peer-less agent and a delegating agent in one runner keep their own sources across runs', async () => {
    const { ran, registry } = setup();
    const helper: Agent = { name: 'helper', tools: ['search'] };
    const boss: Agent = { name: 'boss', tools: ['agent:helper'], peers: [helper] };
    const runner = new AgentRunner({
      registry,
      model: new ScriptedModel({
        // Run 1 (helper as root, peer-less): the peer tool is no tool of the registry.
        // Run 2 (boss): delegation works; inside, helper cannot call agent:helper.
        helper: [{ toolCalls: [{ id: 'a', name: 'agent:helper', arguments: { input: 'x' } }] }, { text: 'one' }],
        boss: [{ toolCalls: [{ id: 'b', name: 'agent:helper', arguments: { input: 'x' } }] }, { text: 'two' }],
      }),
      onRefusal: 'continue',
    });
    const one = await runner.run(helper, 'go');
    expect(one.decisions.at(-1)).toMatchObject({ effect: 'deny', tool: 'agent:helper' });
    const two = await runner.run(boss, 'go');
    expect(two.status).toBe('completed');
    expect(two.decisions.map((d) => [d.agent, d.tool, d.effect])).toEqual([
      ['boss', 'agent:helper', 'allow'],
      ['helper', 'agent:helper', 'deny'],
    ]);
    expect(ran).toEqual([]);
  });
});

describe('attack: a frame view kept for another plan, tenant or caller', () => {
  it('runs of two tenants and callers interleaved on one runner each get their own layers', async () => {
    const { ran, registry } = setup();
    const tenants = { wide: { tools: ['search', 'delete'] }, narrow: { tools: ['search'] } };
    const gate: { open: () => void } = { open: () => {} };
    const wait = new Promise<void>((resolve) => (gate.open = resolve));
    // Each run's model waits between turns so the two runs interleave.
    const model = {
      async generate(request: { messages: readonly { role: string }[] }) {
        const n = request.messages.filter((m) => m.role === 'assistant').length;
        if (n === 1) await wait;
        if (n < 2) return { toolCalls: [{ id: `c${n}`, name: n === 0 ? 'search' : 'delete', arguments: {} }] };
        return { text: 'done' };
      },
    };
    const runner = new AgentRunner({ registry, model, tenants, onRefusal: 'continue' });
    const agent: Agent = { name: 'a', tools: ['search', 'delete'] };
    const runs = [
      runner.run(agent, 'go', { tenant: 'wide', runId: 'r', caller: { id: 'u', scopes: ['search', 'delete'] } }),
      runner.run(agent, 'go', { tenant: 'narrow', runId: 'r', caller: { id: 'u', scopes: ['search', 'delete'] } }),
      runner.run(agent, 'go', { tenant: 'wide', runId: 'r', caller: { id: 'v', scopes: ['search'] } }),
    ];
    setTimeout(() => gate.open(), 20);
    const [wide, narrow, scoped] = await Promise.all(runs);
    expect(wide!.decisions.map((d) => d.effect)).toEqual(['allow', 'allow']);
    expect(narrow!.decisions.map((d) => d.effect)).toEqual(['allow', 'deny']);
    expect(scoped!.decisions.map((d) => d.effect)).toEqual(['allow', 'deny']);
    expect(ran.filter((t) => t === 'delete')).toHaveLength(1);
  });

  it('a plan replaced or changed in place between turns applies at the next call, at the root and below', async () => {
    for (const change of ['replace', 'in-place', 'freeze-then-replace'] as const) {
      const { ran, registry } = setup();
      let plan: string[] = ['search', 'delete', 'agent:helper'];
      if (change === 'freeze-then-replace') Object.freeze(plan);
      const helper: Agent = { name: 'helper', tools: ['search', 'delete'] };
      const root: Agent = { name: 'root', tools: ['search', 'delete', 'agent:helper'], peers: [helper] };
      const narrow = () => {
        if (change === 'in-place') plan.splice(plan.indexOf('delete'), 1);
        else plan = Object.freeze(['search', 'agent:helper']) as string[];
      };
      const model = new ScriptedModel({
        root: [
          { toolCalls: [{ id: 'a', name: 'delete', arguments: {} }] },
          () => {
            narrow();
            return { toolCalls: [{ id: 'b', name: 'delete', arguments: {} }] };
          },
          { toolCalls: [{ id: 'c', name: 'agent:helper', arguments: { input: 'x' } }] },
          { text: 'root done' },
        ],
        helper: [{ toolCalls: [{ id: 'd', name: 'delete', arguments: {} }] }, { text: 'helper done' }],
      });
      const runner = new AgentRunner({ registry, model, tenants: () => ({ tools: plan }), onRefusal: 'continue' });
      const r = await runner.run(root, 'go');
      expect(
        r.decisions.map((d) => [d.agent, d.tool, d.effect]),
        change,
      ).toEqual([
        ['root', 'delete', 'allow'],
        ['root', 'delete', 'deny'],
        ['root', 'agent:helper', 'allow'],
        ['helper', 'delete', 'deny'],
      ]);
      expect(ran).toEqual(['delete']);
    }
  });
});

describe('attack: tally keys and signing keys per run and per runner', () => {
  it('the same run id under another tenant or caller spends a budget of its own; the same identity spends the same', async () => {
    const { ran, registry } = setup();
    const stores = memoryStores();
    const agent: Agent = { name: 'a', tools: ['search'] };
    const runnerOf = (model = calls('search', 'search')) =>
      new AgentRunner({ registry, model, stores, tenants: () => ({ maxToolCalls: 2 }) });
    for (const options of [
      { runId: 'r', tenant: 't1' },
      { runId: 'r', tenant: 't2' },
      { runId: 'r', tenant: 't1', caller: { id: 'other' } },
    ]) {
      const r = await runnerOf().run(agent, 'go', options);
      expect(r.status, JSON.stringify(options)).toBe('completed');
    }
    expect(ran).toHaveLength(6);
    // The first identity again, new call ids: its budget (2 calls) is spent in the store; the call is over the cap.
    const fresh = new ScriptedModel([{ toolCalls: [{ id: 'new', name: 'search', arguments: {} }] }, { text: 'x' }]);
    const again = await runnerOf(fresh).run(agent, 'go', { runId: 'r', tenant: 't1' });
    expect(again.status).toBe('budget_exceeded');
    // The same call ids again: answered from the ledger, nothing runs twice.
    const replay = await runnerOf().run(agent, 'go', { runId: 'r', tenant: 't2' });
    expect(replay.status).toBe('completed');
    expect(ran).toHaveLength(6);
  });

  it('runners on their own memory stores never accept each other\u2019s states', async () => {
    const { ran, registry } = setup();
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [{ name: 'ask', tools: ['delete'], result: 'ask' }], fallback: 'allow' }),
    );
    const agent: Agent = { name: 'a', tools: ['delete'] };
    const mk = () => new AgentRunner({ registry, model: calls('delete'), handler: () => 'pending' });
    const a = mk();
    const paused = await a.run(agent, 'go');
    if (paused.status !== 'paused') throw new Error(`expected a pause, got ${paused.status}`);
    const state = JSON.parse(JSON.stringify(paused.state)) as RunState;
    const decision = a.answer(paused.pending[0]!, 'allow');
    for (let i = 0; i < 20; i++) await expect(mk().resume(state, [decision])).rejects.toBeInstanceOf(RunStateError);
    expect(ran).toEqual([]);
  });

  it('hashOf is createHash over the canonical JSON, for any text', () => {
    const odd = ['', '\u0000', '\ud800', 'a\udc00b', 'é✓😀', '\u2028', 'x'.repeat(70_000)];
    for (const value of [...odd, odd, { [odd[3]!]: odd[2], '': '' }, Buffer.from('héllo'), new Uint8Array([0, 255])])
      expect(hashOf(value)).toBe(createHash('sha256').update(canonicalJson(value)).digest('hex'));
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (value, s) => {
        for (const v of [value, s, [s, value]])
          expect(hashOf(v)).toBe(createHash('sha256').update(canonicalJson(v)).digest('hex'));
      }),
      { numRuns: 500 },
    );
  });
});
