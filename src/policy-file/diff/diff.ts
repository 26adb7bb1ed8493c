/**
 * `diffPolicies(old, new)`: the semantic difference of two policy files. For every tool either file names
 * (and one class for the tools neither names, which globs, namespaces, tags and selector-less rules still
 * select), the allowlist layers and the rule lists of both sides are compared: where the rules differ, the
 * search (search.ts) walks both first-match lists and finds each region of calls decided differently;
 * where a layer differs (a tenant's plan, an agent's declaration, a scope), the side that permits is
 * searched for what it lets through. Every example found is replayed through explain on both files and
 * reported only if both verdicts are the ones claimed; anything not decided is "may change", never equal.
 */
import { canonical, declaredName } from '../../names.js';
import type { PermissionResult } from '../../permissions/result.js';
import type { PolicySet } from '../policy-set.js';
import type { DiffContext as Context, SideModel } from './context.js';
import { argumentsOf, whereText } from './box.js';
import { diffItems } from './items.js';
import { diffLimits } from './limits.js';
import { completeArguments, Replayer } from './replay.js';
import { diffRules, Fingerprints, selection, selectsOthers, stableJson, type DiffRule } from './rules.js';
import {
  search,
  type BoxAnswer,
  type Box,
  type Entry,
  type Leaf,
  type SearchResult,
  type Side,
  type Verdict,
} from './search.js';
import { diffSettings } from './settings.js';
import type {
  DiffDirection,
  DiffExample,
  DiffKind,
  DiffOptions,
  DiffVerdict,
  DiffWho,
  DiffWhoSet,
  PolicyDiff,
} from './types.js';
import type { NameTest } from './values.js';

function model(set: PolicySet, fingerprints: Fingerprints): SideModel {
  const rules = diffRules(set, fingerprints);
  const shadowPolicy = set.data.mode === 'shadow';
  const enforced = shadowPolicy ? [] : rules.filter((r) => !r.shadow);
  const byName = new Map<string, DiffRule[]>();
  const unnamed: DiffRule[] = [];
  for (const r of enforced) {
    if (r.exact.size > 0 && r.globs.length === 0) for (const n of r.exact) byName.set(n, [...(byName.get(n) ?? []), r]);
    else unnamed.push(r);
  }
  const forms = (names: readonly string[] | undefined): Set<string> => new Set((names ?? []).map(canonical));
  return {
    set,
    rules,
    fallback: shadowPolicy ? 'allow' : (set.data.fallback ?? 'deny'),
    enforced,
    byName,
    unnamed,
    described: new Map(set.tools.map((t) => [t.canonicalName, t])),
    agents: new Map(Object.entries(set.data.agents ?? {}).map(([a, spec]) => [a, forms(spec.tools)])),
    tenants: new Map(
      Object.entries(set.data.tenants ?? {}).map(([t, spec]) => [
        t,
        spec.tools === undefined ? null : forms(spec.tools),
      ]),
    ),
    scopes: new Map(Object.entries(set.data.scopes ?? {}).map(([s, names]) => [s, forms(names)])),
    replay: new Replayer(set),
  };
}

/** Every tool name a file mentions, canonical. */
function mentioned(side: SideModel): Set<string> {
  const out = new Set<string>(side.described.keys());
  for (const list of side.agents.values()) for (const n of list) out.add(n);
  for (const list of side.tenants.values()) if (list) for (const n of list) out.add(n);
  for (const list of side.scopes.values()) for (const n of list) out.add(n);
  for (const r of side.rules) for (const n of r.exact) out.add(n);
  return out;
}

/** A tool's candidate rules under one side: those that select it (or may, by its own tags). */
function candidates(side: SideModel, name: string): Entry[] {
  const tool = side.described.get(name);
  const tags = tool ? tool.metadata.allTags : null;
  const out: Entry[] = [];
  const pool = [...(side.byName.get(name) ?? []), ...side.unnamed].sort((a, b) => a.info.index - b.info.index);
  for (const rule of pool) {
    const s = selection(rule, name, tags);
    if (s !== 'no') out.push({ rule, byTags: s === 'tags', byName: null });
  }
  return out;
}

function nameTests(rule: DiffRule): NameTest[] {
  const tests: NameTest[] = [];
  if (rule.namespace !== null) {
    const ns = rule.namespace;
    tests.push({
      kind: 'namespace',
      value: ns,
      structures: [],
      test: (n) => n.startsWith(`${ns}:`),
      text: `is in namespace ${JSON.stringify(ns)}`,
    });
  }
  if (rule.globs.length > 0)
    tests.push({
      kind: 'globs',
      value: rule.globs.map((g) => g.pattern),
      structures: rule.globs.map((g) => g.structure),
      test: (n) => rule.globs.some((g) => g.test(n)),
      text: `matches ${rule.globs.map((g) => g.pattern).join(' or ')}`,
    });
  return tests;
}

/** The candidate rules for tools neither file names. */
function otherCandidates(side: SideModel): Entry[] {
  return side.unnamed
    .filter(selectsOthers)
    .map((rule) => ({ rule, byTags: rule.tags !== null, byName: nameTests(rule) }));
}

function listKey(entries: readonly Entry[], fallback: string): string {
  return `${entries.map((e) => `${e.rule.fingerprint}${e.byTags ? 't' : ''}`).join(',')}|${fallback}`;
}

type LayerState = 'yes' | 'no' | 'ctx';
interface LayerValue {
  readonly layer: 'agent' | 'tenant' | 'caller';
  readonly value: string;
  readonly old: LayerState;
  readonly new: LayerState;
}

function layerValues(oldSide: SideModel, newSide: SideModel, name: string | null): LayerValue[] {
  const out: LayerValue[] = [];
  const agents = new Set([...oldSide.agents.keys(), ...newSide.agents.keys()]);
  const tenants = new Set([...oldSide.tenants.keys(), ...newSide.tenants.keys()]);
  const scopes = new Set([...oldSide.scopes.keys(), ...newSide.scopes.keys()]);
  const agentState = (side: SideModel, a: string): LayerState => {
    const list = side.agents.get(a);
    return list === undefined ? 'ctx' : name !== null && list.has(name) ? 'yes' : 'no';
  };
  const tenantState = (side: SideModel, t: string): LayerState => {
    if (!side.tenants.has(t)) return 'ctx';
    const list = side.tenants.get(t)!;
    return list === null || (name !== null && list.has(name)) ? 'yes' : 'no';
  };
  const scopeState = (side: SideModel, s: string): LayerState =>
    name !== null && side.scopes.get(s)?.has(name) ? 'yes' : 'no';
  for (const a of agents)
    out.push({ layer: 'agent', value: a, old: agentState(oldSide, a), new: agentState(newSide, a) });
  for (const t of tenants)
    out.push({ layer: 'tenant', value: t, old: tenantState(oldSide, t), new: tenantState(newSide, t) });
  for (const s of scopes)
    out.push({ layer: 'caller', value: s, old: scopeState(oldSide, s), new: scopeState(newSide, s) });
  return out;
}

function whoSet(values: readonly LayerValue[], flipped: LayerValue | null): DiffWhoSet {
  const of = (layer: LayerValue['layer']): readonly (string | null)[] | 'any' => {
    if (flipped && flipped.layer === layer) return [flipped.value];
    const all = values.filter((v) => v.layer === layer);
    const both = all.filter((v) => v.old === 'yes' && v.new === 'yes');
    return both.length === all.length ? 'any' : [null, ...both.map((v) => v.value)];
  };
  return { agents: of('agent'), tenants: of('tenant'), scopes: of('caller') };
}

function exampleWho(values: readonly LayerValue[], flipped: LayerValue | null, others: boolean): DiffWho {
  const who: { agent?: string; tenant?: string; scopes?: readonly string[] } = {};
  const agent = values.find((v) => v.layer === 'agent' && v.old === 'yes' && v.new === 'yes');
  if (!others && agent) who.agent = agent.value;
  if (flipped?.layer === 'agent') who.agent = flipped.value;
  if (flipped?.layer === 'tenant') who.tenant = flipped.value;
  if (flipped?.layer === 'caller') who.scopes = [flipped.value];
  return who;
}

function kindOf(o: PermissionResult, n: PermissionResult): { kind: DiffKind; direction: DiffDirection } {
  if (o === n) return { kind: 'ask-rule', direction: 'other' };
  if (n === 'allow') return { kind: 'allowed', direction: 'widen' };
  if (n === 'deny') return { kind: 'denied', direction: 'narrow' };
  return { kind: 'asked', direction: o === 'deny' ? 'widen' : 'narrow' };
}

function answerTags(box: Box): string[] | undefined {
  const a = box.answers.get('#tags') as BoxAnswer | undefined;
  return a && a.status === 'sat' && 'tags' in a ? a.tags : undefined;
}

function answerName(box: Box): string | undefined {
  const a = box.answers.get('#name') as BoxAnswer | undefined;
  return a && a.status === 'sat' && 'present' in a && typeof a.value === 'string' ? a.value : undefined;
}

function matchesClaim(claim: Verdict, got: DiffVerdict): boolean {
  if (claim.effect !== got.effect) return false;
  switch (claim.by) {
    case 'rule':
    case 'rule_error':
      return got.stage === 'policy' && got.rule === claim.rule!.name;
    case 'fallback':
      return got.stage === 'policy' && got.rule === null;
    case 'allowlist':
      return got.stage === 'allowlist';
    case 'context':
      return got.stage === 'context';
  }
}

function claimText(v: Verdict): string {
  const what =
    v.by === 'rule'
      ? `by rule ${JSON.stringify(v.rule!.name)}`
      : v.by === 'rule_error'
        ? `as rule ${JSON.stringify(v.rule!.name)} cannot judge it`
        : v.by === 'fallback'
          ? 'by the fallback'
          : (v.reason ?? v.by);
  return `${v.effect} ${what}`;
}

/** The verdict as claimed, when no replay gave one (an uncertain region). */
function claimed(v: Verdict, side: SideModel): DiffVerdict {
  return {
    effect: v.effect,
    stage: v.by === 'allowlist' ? 'allowlist' : v.by === 'context' ? 'context' : 'policy',
    by: v.by,
    rule: v.rule?.name ?? null,
    line: v.rule ? side.replay.lineOf(v.rule.name) : null,
    layer: v.layer ?? null,
    reason: v.reason ?? claimText(v),
  };
}

function validName(name: string): boolean {
  try {
    return declaredName(name, 'tool') === name;
  } catch {
    return false;
  }
}

function run(ctx: Context, oldSide: Side, newSide: Side): SearchResult {
  ctx.searched++;
  return search(oldSide, newSide, { taken: ctx.taken, validName, budget: ctx.budget });
}

function fixed(layer: LayerValue, side: 'old' | 'new'): Verdict {
  const state = layer[side];
  if (state === 'ctx')
    return {
      effect: 'deny',
      by: 'context',
      rule: null,
      reason: `the ${side} file does not declare ${layer.layer} ${JSON.stringify(layer.value)}`,
    };
  const refusing = layer.layer === 'agent' ? 'not_declared' : layer.layer;
  const text =
    layer.layer === 'agent'
      ? `agent ${JSON.stringify(layer.value)} does not declare the tool`
      : layer.layer === 'tenant'
        ? `tenant ${JSON.stringify(layer.value)}'s plan does not include the tool`
        : `scope ${JSON.stringify(layer.value)} does not cover the tool`;
  return { effect: 'deny', by: 'allowlist', rule: null, layer: refusing, reason: text };
}

/** Turns the leaves of one search into verified changes (or uncertain regions). */
async function report(
  ctx: Context,
  result: SearchResult,
  tool: { readonly name: string | null; readonly others: boolean },
  values: readonly LayerValue[],
  flipped: LayerValue | null,
): Promise<void> {
  const who = whoSet(values, flipped);
  const subject = tool.name ?? '(a tool neither file names)';
  const relabel = (v: Verdict, side: 'old' | 'new'): Verdict =>
    flipped && (v.by === 'allowlist' || v.by === 'context') ? fixed(flipped, side) : v;
  for (const leaf of result.leaves) {
    const o = relabel(leaf.old, 'old');
    const n = relabel(leaf.new, 'new');
    const { kind, direction } = kindOf(o.effect, n.effect);
    const where =
      whereText(leaf.box) +
      (leaf.boxes > 1 ? ` (and ${leaf.boxes - 1} more part${leaf.boxes > 2 ? 's' : ''} alike)` : '');
    const built = argumentsOf(leaf.box);
    const name = tool.name ?? answerName(leaf.box) ?? freshName(ctx.taken);
    const tags = answerTags(leaf.box);
    let example: DiffExample = {
      tool: name,
      arguments: built.args,
      who: exampleWho(values, flipped, tool.others),
      ...(tags && (tags.length > 0 || tool.others) ? { ownTags: tags } : {}),
    };
    let got = await Promise.all([ctx.old.replay.verdict(example), ctx.new.replay.verdict(example)]);
    if (
      !(matchesClaim(o, got[0]) && matchesClaim(n, got[1])) &&
      (got[0].stage === 'validation' || got[1].stage === 'validation')
    ) {
      // The tool's parameters schema wants more than the rules name: fill in what it requires.
      const schema = (await (got[0].stage === 'validation' ? ctx.old : ctx.new).replay.tool(example))?.inputSchema;
      example = { ...example, arguments: completeArguments(schema, example.arguments) };
      got = await Promise.all([ctx.old.replay.verdict(example), ctx.new.replay.verdict(example)]);
    }
    if (built.ok && matchesClaim(o, got[0]) && matchesClaim(n, got[1])) {
      ctx.changes.push({
        kind,
        direction,
        tool: name,
        others: tool.others,
        who,
        where,
        old: got[0],
        new: got[1],
        example,
      });
    } else {
      ctx.uncertain.push({
        direction,
        tool: subject,
        others: tool.others,
        who,
        where,
        reason: `the example found (${JSON.stringify(example.arguments)}) replays as ${got[0].effect} / ${got[1].effect}, not as ${claimText(o)} / ${claimText(n)} (the tool's parameters schema or overlapping argument paths); whether a valid call lies in the region is not decided`,
        old: claimed(o, ctx.old),
        new: claimed(n, ctx.new),
      });
    }
  }
  for (const leaf of result.uncertain) {
    const o = relabel(leaf.old, 'old');
    const n = relabel(leaf.new, 'new');
    ctx.uncertain.push({
      direction: kindOf(o.effect, n.effect).direction,
      tool: subject,
      others: tool.others,
      who,
      where: whereText(leaf.box),
      reason: [...new Set(leaf.box.unknown)].join('; '),
      old: claimed(o, ctx.old),
      new: claimed(n, ctx.new),
    });
  }
  if (result.exhausted)
    ctx.uncertain.push({
      direction: 'other',
      tool: subject,
      others: tool.others,
      who,
      where: 'calls the search did not reach',
      reason: `the rules for this tool have more regions than the search budget (${ctx.budget} branches) covers`,
      old: null,
      new: null,
    });
}

function freshName(taken: readonly string[]): string {
  for (let i = 0; ; i++) {
    const name = i === 0 ? 'other_tool' : `other_tool_${i}`;
    if (!taken.includes(name)) return name;
  }
}

/** Compares one tool (or the class of tools neither file names) under both files. */
async function compareTool(ctx: Context, name: string | null): Promise<void> {
  const others = name === null;
  const oldEntries = others ? otherCandidates(ctx.old) : candidates(ctx.old, name);
  const newEntries = others ? otherCandidates(ctx.new) : candidates(ctx.new, name);
  const values = layerValues(ctx.old, ctx.new, name).filter(
    // A tool neither file names is not in any agent's declaration or scope: only the tenants' "states nothing" plans matter.
    (v) => !others || v.layer === 'tenant',
  );
  const oldSide: Side = { entries: oldEntries, fallback: ctx.old.fallback };
  const newSide: Side = { entries: newEntries, fallback: ctx.new.fallback };
  const tool = { name, others };
  if (Date.now() > ctx.deadline) {
    ctx.uncertain.push({
      direction: 'other',
      tool: name ?? '(a tool neither file names)',
      others,
      who: whoSet(values, null),
      where: 'every call',
      reason: 'the diff reached its time limit before this tool',
      old: null,
      new: null,
    });
    return;
  }
  if (listKey(oldEntries, ctx.old.fallback) !== listKey(newEntries, ctx.new.fallback))
    await report(ctx, run(ctx, oldSide, newSide), tool, values, null);
  let widened: SearchResult | null = null;
  let narrowed: SearchResult | null = null;
  for (const v of values) {
    if (v.old !== 'yes' && v.new === 'yes') {
      widened ??= run(ctx, { fixed: fixed(v, 'old') }, newSide);
      await report(ctx, widened, tool, values, v);
    } else if (v.old === 'yes' && v.new !== 'yes') {
      narrowed ??= run(ctx, oldSide, { fixed: fixed(v, 'new') });
      await report(ctx, narrowed, tool, values, v);
    }
  }
  if (!others) schemaChange(ctx, name, values);
}

/** A tool whose parameters schema differs: calls valid under one file and not the other are not decided. */
function schemaChange(ctx: Context, name: string, values: readonly LayerValue[]): void {
  const a = ctx.old.described.get(name);
  const b = ctx.new.described.get(name);
  const sa = stableJson(a ? a.inputSchema : { type: 'object' });
  const sb = stableJson(b ? b.inputSchema : { type: 'object' });
  if (sa === sb) return;
  ctx.uncertain.push({
    direction: 'other',
    tool: name,
    others: false,
    who: whoSet(values, null),
    where: 'calls valid under one parameters schema and not the other',
    reason:
      "the tool's parameters schema changed; which arguments one JSON Schema accepts and the other refuses is not decided",
    old: null,
    new: null,
  });
}

/**
 * The semantic difference of two loaded policy files: every region of calls (by agent, tenant and tool,
 * and the arguments) decided one way under `old` and another under `next`, each with an example call
 * that `explain` decides so under each file; regions that may change where a condition could not be
 * decided; and the settings that changed.
 *
 * @example
 * const diff = await diffPolicies(await loadPolicyFile('main.yaml'), await loadPolicyFile('branch.yaml'));
 * if (diff.widens) for (const c of diff.changes) console.log(c.kind, c.tool, c.example.arguments);
 */
export async function diffPolicies(old: PolicySet, next: PolicySet, options: DiffOptions = {}): Promise<PolicyDiff> {
  const started = Date.now();
  const fingerprints = new Fingerprints();
  const oldSide = model(old, fingerprints);
  const newSide = model(next, fingerprints);
  const names = [...new Set([...mentioned(oldSide), ...mentioned(newSide)])].sort();
  const ctx: Context = {
    old: oldSide,
    new: newSide,
    taken: names,
    changes: [],
    uncertain: [],
    budget: options.budget ?? 50_000,
    deadline: started + (options.timeLimitMs ?? 20_000),
    searched: 0,
  };
  for (const name of names) await compareTool(ctx, name);
  await compareTool(ctx, null);
  await diffLimits(ctx, names);
  await diffItems(ctx);
  const settings = diffSettings(oldSide, newSide);
  const counts = (d: DiffDirection): boolean =>
    ctx.changes.some((c) => c.direction === d) ||
    ctx.uncertain.some((u) => u.direction === d || u.direction === 'other') ||
    settings.some((s) => s.direction === d);
  return {
    old: { file: old.file, version: old.version },
    new: { file: next.file, version: next.version },
    equal: ctx.changes.length === 0 && ctx.uncertain.length === 0,
    widens: counts('widen'),
    narrows: counts('narrow'),
    changes: ctx.changes,
    uncertain: ctx.uncertain,
    settings,
    stats: { tools: names.length + 1, searched: ctx.searched, ms: Date.now() - started },
  };
}

export type { Leaf };
