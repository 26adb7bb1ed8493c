/**
 * The diff of `resources:` and `prompts:` rules (compared in the gate's rule form, each example replayed
 * through the gate's decide on the gate-level tool), the other sections of the file (named as settings),
 * and regions too large for the time limit or the search budget: "may change", named, never equal.
 */
import { describe, expect, it } from 'vitest';
import { diffPolicies, diffText, type DiffChange, type PolicyDiff } from '../../src/policy-file/diff/index.js';
import { itemTool } from '../../src/policy-file/items.js';
import { parsePolicy } from '../../src/policy-file/load.js';
import type { PolicySet } from '../../src/policy-file/policy-set.js';
import { ToolRegistry } from '../../src/registry.js';

function load(text: string): PolicySet {
  const r = parsePolicy(text, { format: 'yaml' });
  if (!r.ok) throw new Error(r.issues.map((i) => i.message).join('; '));
  return r.policy;
}

async function diff(a: string, b: string, options = {}): Promise<PolicyDiff> {
  return diffPolicies(load(a), load(b), options);
}

/** How the gate decides an item call under a file: the gate-level tool in a registry of its own, as the gateway does. */
async function decided(text: string, change: DiffChange): Promise<{ effect: string; rule: string | null }> {
  const set = load(text);
  const kind = change.item!;
  const registry = new ToolRegistry();
  registry.register(itemTool(kind, () => 'ran'));
  registry.setPermissionPolicy(kind === 'resource' ? set.resources.policy : set.prompts.policy);
  const d = await registry.decide({ name: change.example.tool, arguments: change.example.arguments });
  // An ask with nobody to ask (this registry has no person) is refused as `no_handler`: the rule asked.
  return { effect: d.by === 'no_handler' ? 'ask' : d.effect, rule: d.rule };
}

async function replays(a: string, b: string, d: PolicyDiff): Promise<void> {
  for (const c of d.changes.filter((x) => x.item)) {
    expect(await decided(a, c)).toEqual({ effect: c.old.effect, rule: c.old.rule });
    expect(await decided(b, c)).toEqual({ effect: c.new.effect, rule: c.new.rule });
  }
}

const EXACT = `version: 1
resources:
  - { name: deny_key, result: deny, namespace: docs, uri: "file:///srv/secrets/key" }
  - { name: allow_readme, result: allow, namespace: docs, uri: "file:///srv/public/readme" }
`;

describe('toolgate diff: resources', () => {
  it('an allow moved above a deny of the same URI: the read is newly allowed, with the read that shows it', async () => {
    const moved = `version: 1
resources:
  - { name: allow_key, result: allow, namespace: docs, uri: "file:///srv/secrets/key" }
  - { name: deny_key, result: deny, namespace: docs, uri: "file:///srv/secrets/key" }
`;
    const d = await diff(EXACT, moved);
    expect(d.equal).toBe(false);
    expect(d.widens).toBe(true);
    const read = d.changes.find((c) => c.item === 'resource' && c.kind === 'allowed');
    expect(read).toMatchObject({
      tool: 'resource',
      direction: 'widen',
      example: { tool: 'resource', arguments: { namespace: 'docs', uri: 'file:///srv/secrets/key', action: 'read' } },
      old: { effect: 'deny', rule: 'deny_key' },
      new: { effect: 'allow', rule: 'allow_key' },
    });
    // Exact URIs only: the examples stand for every read, nothing "may change".
    expect(d.uncertain).toEqual([]);
    await replays(EXACT, moved, d);
    expect(diffText(d)).toContain('resource reads (resources:)');
  });

  it('a URI spelled another way (empty segment, case of the scheme) is the same rule: no change', async () => {
    const respelled = EXACT.replace('"file:///srv/secrets/key"', '"FILE:///srv//secrets/key"').replace(
      'name: deny_key',
      'name: deny_the_key',
    );
    const d = await diff(EXACT, respelled);
    expect(d).toMatchObject({ equal: true, changes: [], uncertain: [] });
  });

  it('globs: the reads found are reported, the rest is "may change", named, with the way the edit can move access', async () => {
    const pair = `version: 1
resources:
  - { name: deny_secrets, result: deny, uri: "file:///srv/secrets/**" }
  - { name: allow_srv, result: allow, uri: "file:///srv/**" }
`;
    const swapped = `version: 1
resources:
  - { name: allow_srv, result: allow, uri: "file:///srv/**" }
  - { name: deny_secrets, result: deny, uri: "file:///srv/secrets/**" }
`;
    const d = await diff(pair, swapped);
    const found = d.changes.filter((c) => c.item === 'resource');
    expect(found.length).toBeGreaterThan(0);
    expect(found[0]).toMatchObject({ kind: 'allowed', old: { rule: 'deny_secrets' }, new: { rule: 'allow_srv' } });
    expect(String(found[0]!.example.arguments['uri'])).toMatch(/^file:\/\/\/srv\/secrets/);
    await replays(pair, swapped, d);
    const maybe = d.uncertain.filter((u) => u.item === 'resource');
    expect(maybe).toHaveLength(1);
    expect(maybe[0]!.reason).toContain('file:///srv/secrets/**');
    expect(maybe[0]!.direction).toBe('other');

    // A deny added on top (a kill switch) can only narrow: "may change" says so, and nothing widens.
    const killed = pair.replace(
      'resources:\n',
      'resources:\n  - { name: kill, result: deny, uri: "file:///srv/**" }\n',
    );
    const k = await diff(pair, killed);
    expect(k.uncertain.map((u) => u.direction)).toEqual(['narrow']);
    expect(k.widens).toBe(false);
    expect(k.narrows).toBe(true);
    await replays(pair, killed, k);
  });

  it('a resource rule put in shadow mode widens (a setting), and its reads are newly allowed where the fallback allows', async () => {
    const shadow = EXACT.replace('uri: "file:///srv/secrets/key" }', 'uri: "file:///srv/secrets/key", mode: shadow }');
    const d = await diff(EXACT, shadow);
    expect(d.settings).toContainEqual(
      expect.objectContaining({ setting: 'rule-mode', subject: 'resources: deny_key', direction: 'widen' }),
    );
    // The fallback denies what the shadowed deny denied: no read is decided differently, the setting still widens.
    expect(d.changes).toEqual([]);
    expect(d.widens).toBe(true);
    const open = (t: string): string => t.replace('version: 1\n', 'version: 1\nfallback: allow\n');
    const o = await diff(open(EXACT), open(shadow));
    expect(o.changes.filter((c) => c.item === 'resource')).toMatchObject([
      { kind: 'allowed', old: { rule: 'deny_key' }, new: { by: 'fallback' } },
    ]);
    await replays(open(EXACT), open(shadow), o);
  });
});

describe('toolgate diff: prompts', () => {
  const PROMPTS = `version: 1
prompts:
  - { name: long, result: ask, namespace: docs, prompts: summarize, when: { length: { gt: 1000 } } }
  - { name: summaries, result: allow, namespace: docs, prompts: summarize }
`;
  it("a bound of a prompt's condition moved: the one region between, with its arguments", async () => {
    const moved = PROMPTS.replace('gt: 1000', 'gt: 2000');
    const d = await diff(PROMPTS, moved);
    const c = d.changes.filter((x) => x.item === 'prompt');
    expect(c).toHaveLength(1);
    expect(c[0]).toMatchObject({
      kind: 'allowed',
      tool: 'prompt',
      example: { arguments: { namespace: 'docs', name: 'summarize', action: 'get', arguments: { length: 1001 } } },
      old: { effect: 'ask', rule: 'long' },
      new: { effect: 'allow', rule: 'summaries' },
    });
    expect(d.uncertain).toEqual([]);
    await replays(PROMPTS, moved, d);
  });

  it('renaming a prompt rule changes nothing', async () => {
    const d = await diff(PROMPTS, PROMPTS.replace('name: long', 'name: long_texts'));
    expect(d).toMatchObject({ equal: true, changes: [], uncertain: [] });
  });

  it('a prompt added to an allow by a name glob: found, and the rest "may change"', async () => {
    const globbed = PROMPTS.replace('prompts: summarize }', 'prompts: "sum*" }');
    const d = await diff(PROMPTS, globbed);
    expect(d.changes.some((c) => c.item === 'prompt' && c.kind === 'allowed')).toBe(true);
    expect(d.uncertain.filter((u) => u.item === 'prompt')).toHaveLength(1);
    await replays(PROMPTS, globbed, d);
  });
});

describe('toolgate diff: every section is compared or named', () => {
  const BASE = `version: 1
tools:
  refund: { description: Refund an order, tags: [destructive] }
rules:
  - { name: refunds, result: ask, tools: refund }
approvals:
  escalateTo: [alice]
gateway:
  pin: refuse
  upstreams:
    shop: { command: node, args: [shop.js] }
`;
  it.each([
    ["a tool's description", BASE.replace('Refund an order', 'Refund a whole order'), 'tool'],
    ['the escalation list', BASE.replace('[alice]', '[alice, mallory]'), 'approvals'],
    ["an upstream's command line", BASE.replace('[shop.js]', '[shop2.js]'), 'upstreams'],
    ['the pin lock file', BASE.replace('  pin: refuse', '  pin: refuse\n  lock: pins.lock'), 'lock'],
  ])('%s: named as a setting that changed (nothing it decides)', async (_what, changed, setting) => {
    const d = await diff(BASE, changed);
    expect(d.settings.map((s) => s.setting)).toContain(setting);
    expect(d.changes).toEqual([]);
  });
});

describe('toolgate diff: what the time limit or the budget leaves is "may change", named', () => {
  const A = `version: 1
tools:
  refund: {}
  search: {}
rules:
  - { name: small, result: allow, tools: refund, when: { amount: { lte: 50 } } }
  - { name: searches, result: allow, tools: search }
resources:
  - { name: deny_key, result: deny, uri: "file:///srv/secrets/key" }
`;
  const B = A.replace('lte: 50', 'lte: 60').replace('result: deny', 'result: allow');

  it('past the time limit: every tool and the resources are "may change", each named, and the diff is not equal', async () => {
    const d = await diff(A, B, { timeLimitMs: -1 });
    expect(d.equal).toBe(false);
    expect(d.changes).toEqual([]);
    const named = d.uncertain.map((u) => [u.item ?? u.tool, u.reason]);
    expect(named).toContainEqual(['refund', 'the diff reached its time limit before this tool']);
    expect(named).toContainEqual(['search', 'the diff reached its time limit before this tool']);
    expect(named).toContainEqual(['resource', 'the diff reached its time limit']);
    expect(d.widens).toBe(true);
    expect(diffText(d)).toContain('may change');
  });

  it('past the search budget: the tool whose search stopped is "may change", named', async () => {
    const d = await diff(A, B, { budget: 1 });
    expect(d.uncertain).toContainEqual(
      expect.objectContaining({
        tool: 'refund',
        where: 'calls the search did not reach',
        reason: expect.stringContaining('search budget (1 branches)'),
      }),
    );
    expect(d.equal).toBe(false);
  });
});
