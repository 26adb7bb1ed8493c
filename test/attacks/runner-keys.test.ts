/**
 * Attacks (issue 25, runner fixed costs): the ledger and tally keys built from a head cached per frame / run,
 * the agent spec taken again while its declaration compares equal, and the pooled runner keys.
 * - Keys: for any run id, tenant, caller id, frame key and call id (quotes, commas, brackets, backslashes,
 *   U+2028, lone surrogates) the key is exactly JSON.stringify of the tuple — so two runs' (or tenants') keys
 *   are equal only when their tuples are, and one run's ledger row never answers another's call — also when
 *   one frame object is keyed under two runs.
 * - Specs: an agent object changed between runs (tools pushed, replaced, a getter, a Proxy, an Array subclass,
 *   renamed, peers swapped) gets the spec of what it declares now, frozen; a colliding declaration still throws.
 * - randomKey: every key is fresh, 32 bytes, and a caller writing into one changes no other.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { randomKey } from '../../src/crypto.js';
import { agentGraph } from '../../src/runner/agents.js';
import { ledgerKeyOf, tallyKeyOf, type Frame, type Run, type Turn } from '../../src/runner/run.js';
import type { Agent } from '../../src/runner/types.js';

const text = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.constantFrom('"', '","', '\\', '\u2028', '\ud800', ']', '[', ',', 'a","b', '"],["'),
);

function runOf(runId: string, tenant: string, caller: string | null, root = 'root'): Run {
  return {
    runId,
    tenant,
    caller: { id: caller, scopes: null },
    root,
    keys: { tally: null, scope: null },
  } as unknown as Run;
}
const frameOf = (key: string): Frame => ({ key, view: null, ledgerHead: null }) as unknown as Frame;
const turnOf = (index: number): Turn => ({ index }) as unknown as Turn;

describe('attack: ledger and tally keys from cached heads', () => {
  it('is JSON.stringify of the tuple for any strings, also with one frame keyed under two runs', () => {
    fc.assert(
      fc.property(
        fc.tuple(text, text, fc.option(text), text, fc.nat(1e6), text),
        fc.tuple(text, text, fc.option(text), fc.nat(1e6), text),
        ([runId, tenant, caller, fkey, index, callId], [runId2, tenant2, caller2, index2, callId2]) => {
          const frame = frameOf(fkey);
          const a = runOf(runId, tenant, caller);
          const b = runOf(runId2, tenant2, caller2);
          const ka = ledgerKeyOf(a, frame, turnOf(index), callId).key;
          expect(ka).toBe(JSON.stringify([runId, tenant, caller, fkey, index, callId]));
          // The same frame object under another run: its head is not the first run's.
          const kb = ledgerKeyOf(b, frame, turnOf(index2), callId2).key;
          expect(kb).toBe(JSON.stringify([runId2, tenant2, caller2, fkey, index2, callId2]));
          expect(ledgerKeyOf(a, frame, turnOf(index), callId).key).toBe(ka);
          expect(tallyKeyOf(a)).toBe(JSON.stringify([runId, tenant, caller, 'root']));
          expect(tallyKeyOf(b)).toBe(JSON.stringify([runId2, tenant2, caller2, 'root']));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('keeps tenants apart whose ids would join the same under naive concatenation', () => {
    const frame = frameOf('root');
    const a = ledgerKeyOf(runOf('r', 'acme","x', 'c'), frame, turnOf(0), 'call').key;
    const b = ledgerKeyOf(runOf('r', 'acme', 'x","c'), frame, turnOf(0), 'call').key;
    expect(a).not.toBe(b);
  });
});

describe('attack: an agent object changed between runs', () => {
  const tools = (graph: ReturnType<typeof agentGraph>, name: string) => graph[name]!.tools;

  it('gets a spec of what it declares now, frozen', () => {
    const helper: Agent = { name: 'helper', tools: ['search'] };
    const agent: { -readonly [K in keyof Agent]: Agent[K] } = { name: 'a', tools: ['search'], peers: [helper] };
    const first = agentGraph(agent);
    expect(Object.isFrozen(first['a']!.tools)).toBe(true);
    // Pushed in place.
    (agent.tools as string[]).push('refund');
    expect(tools(agentGraph(agent), 'a')).toEqual(['search', 'refund']);
    // Back to one tool: the spec is not the two-tool one.
    (agent.tools as string[]).pop();
    expect(tools(agentGraph(agent), 'a')).toEqual(['search']);
    // A getter answering another list each run.
    let n = 0;
    const getter = {
      name: 'g',
      get tools() {
        return n++ % 2 === 0 ? ['search'] : ['search', 'sudo'];
      },
    } as Agent;
    expect(tools(agentGraph(getter), 'g')).toEqual(['search']);
    expect(tools(agentGraph(getter), 'g')).toEqual(['search', 'sudo']);
    expect(tools(agentGraph(getter), 'g')).toEqual(['search']);
    // An Array subclass and a Proxy whose iteration differs from its indexes.
    class Sneaky extends Array<string> {}
    const sneaky = Sneaky.from(['search']) as unknown as string[];
    const viaSub: Agent = { name: 's', tools: sneaky };
    expect(tools(agentGraph(viaSub), 's')).toEqual(['search']);
    sneaky.push('sudo');
    expect(tools(agentGraph(viaSub), 's')).toEqual(['search', 'sudo']);
    const inner = ['search'];
    const proxy = new Proxy(inner, {});
    const viaProxy: Agent = { name: 'p', tools: proxy };
    expect(tools(agentGraph(viaProxy), 'p')).toEqual(['search']);
    inner.push('refund');
    expect(tools(agentGraph(viaProxy), 'p')).toEqual(['search', 'refund']);
    // Peers swapped for another object of the same name: that object's own spec.
    agent.peers = [{ name: 'helper', tools: ['sudo'] }];
    expect(tools(agentGraph(agent), 'helper')).toEqual(['sudo']);
    // Renamed: the spec carries the new name.
    agent.name = 'b';
    expect(agentGraph(agent)['b']!.name).toBe('b');
    // A declaration that collides once changed is still refused, and the agent's earlier spec is not reused.
    agent.tools = ['search', 'SEARCH'];
    expect(() => agentGraph(agent)).toThrow();
    agent.tools = ['search'];
    expect(tools(agentGraph(agent), 'b')).toEqual(['search']);
  });
});

describe('attack: pooled runner keys', () => {
  it('never hands out one key twice, and a key written by its holder changes no other', () => {
    const seen = new Set<string>();
    const keys: Uint8Array[] = [];
    for (let i = 0; i < 1000; i++) {
      const key = randomKey();
      expect(key.length).toBe(32);
      const hex = Buffer.from(key).toString('hex');
      expect(seen.has(hex)).toBe(false);
      seen.add(hex);
      keys.push(key);
    }
    const copy = Buffer.from(keys[1]!).toString('hex');
    keys[0]!.fill(0);
    expect(Buffer.from(keys[1]!).toString('hex')).toBe(copy);
    // Each key owns its bytes (not a view into a pool another key is cut from).
    expect(keys[0]!.byteOffset).toBe(0);
    expect(keys[0]!.buffer.byteLength).toBe(32);
  });
});
