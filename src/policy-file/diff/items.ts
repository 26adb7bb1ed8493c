/**
 * The `resources:` and `prompts:` rules in the diff. They are compiled into the gate's rule form (a
 * PermissionPolicy over the gate-level tool `resource` or `prompt`, items.ts), and the diff compares those
 * two policies on example calls: for every namespace the rules name (and one neither names), every item
 * key the rules name or their globs match (each exact URI with its case and query variants, each glob's
 * own sample and its folder, a key no rule names), the verdict of each side. A prompt's `when:` conditions
 * are searched exactly, as a tool's are (search.ts), over the prompt's arguments.
 *
 * With exact URIs and names only the examples stand for every call (a rule selects by equality of the
 * namespace and of the key's folded and query-less forms, and every class of keys those equalities make
 * has one example among the candidates). With globs they do not: the region is reported as "may change",
 * named, with the direction the edit can move access in (a deny added or an allow removed only narrows),
 * never as equal.
 */
import { canonical } from '../../names.js';
import type { PermissionResult } from '../../permissions/result.js';
import type { PolicyEvaluation } from '../../permissions/policy.js';
import type { Tool } from '../../tool.js';
import { itemTool, type ItemKind, type ItemRuleInfo, type ItemRules } from '../items.js';
import { isGlob } from '../matchers.js';
import type { PolicyFileData } from '../types.js';
import { decisionForms, foldedUri, normalResourceUri, normalUriGlob } from '../uri.js';
import { argumentsOf, whereText } from './box.js';
import { editDirection } from './edit-direction.js';
import type { DiffContext, SideModel } from './context.js';
import { stableJson, type ArgBlock, type DiffRule } from './rules.js';
import { search, type Entry, type Verdict } from './search.js';
import type { DiffChange, DiffExample, DiffVerdict } from './types.js';
import { testSpec } from './values.js';

/** The most example calls one kind is compared on before the rest is "may change". */
const MAX_PROBES = 200_000;

interface ItemRule {
  readonly info: ItemRuleInfo;
  readonly patterns: readonly string[] | null;
  readonly fingerprint: string;
  readonly selector: string;
  readonly globs: readonly string[];
  readonly exact: readonly string[];
  /** The rule in the search's form (its `when:` tests as argument blocks), for prompts. */
  readonly diffRule: DiffRule;
}

interface ItemSide {
  readonly items: ItemRules;
  readonly enforced: readonly ItemRule[];
  readonly fallback: PermissionResult;
  readonly tool: Tool;
}

function refuse(): never {
  throw new Error('the diff compares decisions; it never runs a call');
}

function rawPatterns(kind: ItemKind, data: PolicyFileData, index: number): readonly string[] | null {
  const rule = (kind === 'resource' ? data.resources : data.prompts)?.[index] as
    { uri?: string | readonly string[]; prompts?: string | readonly string[] } | undefined;
  const raw = kind === 'resource' ? rule?.uri : rule?.prompts;
  return raw === undefined ? null : typeof raw === 'string' ? [raw] : raw;
}

/** A pattern in the form the rule compares (so two spellings of one URI are one rule). */
function normalPattern(kind: ItemKind, pattern: string): { glob: boolean; form: string } {
  try {
    if (kind === 'prompt') {
      const form = canonical(pattern);
      return { glob: isGlob(form), form };
    }
    if (isGlob(pattern)) return { glob: true, form: normalUriGlob(pattern) };
    const normal = normalResourceUri(pattern);
    return { glob: false, form: normal.ok ? decisionForms(normal.uri).full : pattern };
  } catch {
    return { glob: true, form: pattern };
  }
}

function itemRules(kind: ItemKind, side: SideModel, prints: Map<string, number>): ItemSide {
  const items = kind === 'resource' ? side.set.resources : side.set.prompts;
  const data = side.set.data;
  const shadowPolicy = data.mode === 'shadow';
  const enforced: ItemRule[] = [];
  for (const info of items.rules) {
    if (shadowPolicy || info.shadow) continue;
    const patterns = rawPatterns(kind, data, info.index);
    const forms = (patterns ?? []).map((p) => normalPattern(kind, p));
    const when = (data.prompts?.[info.index] as { when?: Record<string, unknown> } | undefined)?.when;
    const selectorData = {
      namespace: info.namespace,
      patterns: patterns === null ? null : [...new Set(forms.map((f) => `${f.glob ? 'g' : 'e'}:${f.form}`))].sort(),
      when: kind === 'prompt' ? (when ?? {}) : {},
    };
    const selector = stableJson(selectorData);
    const fingerprint = stableJson({ result: info.result, selector: selectorData });
    const blocks: ArgBlock[] = [];
    for (const t of info.tests) {
      const condition = (when?.[t.arg.slice('arguments.'.length)] ?? {}) as {
        caseInsensitive?: boolean;
        realpath?: boolean;
      };
      const spec = testSpec(t, {
        caseInsensitive: condition.caseInsensitive === true,
        realpath: condition.realpath === true,
      });
      const last = blocks[blocks.length - 1];
      if (last && last.arg === t.arg) (last.tests as (typeof spec)[]).push(spec);
      else blocks.push({ key: `arg:${t.arg}`, arg: t.arg, tests: [spec] });
    }
    // The search reads a rule's result, fingerprint, name, blocks and tags only.
    const diffRule = {
      info: null,
      name: info.name,
      result: info.result,
      fingerprint: numberOf(prints, fingerprint),
      shadow: false,
      exact: new Set<string>(),
      globs: [],
      namespace: null,
      tags: null,
      blocks,
    } as unknown as DiffRule;
    enforced.push({
      info,
      patterns,
      fingerprint,
      selector,
      globs: forms.filter((f) => f.glob).map((f) => f.form),
      exact: forms.filter((f) => !f.glob).map((f) => f.form),
      diffRule,
    });
  }
  return { items, enforced, fallback: side.fallback, tool: itemTool(kind, refuse) };
}

/** One number per fingerprint text, shared by both sides of one kind. */
function numberOf(prints: Map<string, number>, text: string): number {
  let n = prints.get(text);
  if (n === undefined) prints.set(text, (n = prints.size));
  return n;
}

/** Sample keys a glob matches: its wildcards filled in, its braces spelled out; and its folder for `dir/**`. */
function globSamples(glob: string): string[] {
  const out: string[] = [];
  const expand = (text: string, depth: number): string[] => {
    const open = text.search(/(?<!\\)\{/);
    if (open < 0 || depth > 3) return [text];
    let level = 0;
    let close = -1;
    for (let i = open; i < text.length; i++) {
      if (text[i] === '\\') i++;
      else if (text[i] === '{') level++;
      else if (text[i] === '}' && --level === 0) {
        close = i;
        break;
      }
    }
    if (close < 0) return [text];
    const inner = text.slice(open + 1, close);
    const alternatives: string[] = [];
    let at = 0;
    level = 0;
    for (let i = 0; i < inner.length; i++) {
      if (inner[i] === '\\') i++;
      else if (inner[i] === '{') level++;
      else if (inner[i] === '}') level--;
      else if (inner[i] === ',' && level === 0) {
        alternatives.push(inner.slice(at, i));
        at = i + 1;
      }
    }
    alternatives.push(inner.slice(at));
    return alternatives
      .slice(0, 8)
      .flatMap((alt) => expand(text.slice(0, open) + alt + text.slice(close + 1), depth + 1));
  };
  for (const text of expand(glob, 0)) {
    let sample = '';
    for (let i = 0; i < text.length; i++) {
      const ch = text[i]!;
      if (ch === '\\' && i + 1 < text.length) sample += text[++i];
      else if (ch === '*') {
        while (text[i + 1] === '*') i++;
        sample += 'x';
      } else if (ch === '?') sample += 'x';
      else if (ch === '[') {
        const close = text.indexOf(']', i + 2);
        const body = close < 0 ? '' : text.slice(i + 1, close);
        sample += body.startsWith('!') || body.startsWith('^') || body === '' ? 'x' : body[0];
        i = close < 0 ? text.length : close;
      } else sample += ch;
    }
    out.push(sample);
    const folder = /^(.*?)\/\*\*$/.exec(text);
    if (folder) out.push(folder[1]!);
  }
  return out;
}

/** A URI spelled in other cases (a rule that refuses or asks compares folded: these are the same to it). */
function caseVariants(uri: string): string[] {
  const last = uri.lastIndexOf('/') + 1;
  return [
    uri.toUpperCase(),
    uri.toLowerCase(),
    uri.slice(0, last) + uri.slice(last, last + 1).toUpperCase() + uri.slice(last + 1).toLowerCase(),
  ];
}

/**
 * Whether the example keys stand for every key: no globs, and for each exact URI of a rule that refuses
 * or asks a spelling of it that no allow names exactly (the class "folded equal, not allowed as written").
 */
function complete(kind: ItemKind, rules: readonly ItemRule[], keys: ReadonlySet<string>): boolean {
  if (rules.some((r) => r.globs.length > 0)) return false;
  if (kind === 'prompt') return true;
  const allowed = new Set(rules.filter((r) => r.info.result === 'allow').flatMap((r) => r.exact));
  return rules
    .filter((r) => r.info.result !== 'allow')
    .every((r) =>
      r.exact.every((e) => {
        const fold = foldedUri(e);
        return [e, ...caseVariants(e)].some((v) => {
          const n = normalResourceUri(v);
          return n.ok && keys.has(n.uri) && foldedUri(n.uri) === fold && !allowed.has(decisionForms(n.uri).full);
        });
      }),
    );
}

/** The keys to compare: every pattern's own keys and variants, and one key no rule names. */
function candidateKeys(kind: ItemKind, rules: readonly ItemRule[]): string[] {
  const raw: string[] = [];
  for (const r of rules) {
    for (const e of r.exact) {
      raw.push(e);
      if (kind === 'resource') {
        raw.push(...caseVariants(e), `${e}${e.includes('?') ? '&' : '?'}toolgate-diff`);
        const path = decisionForms(e).path;
        if (path !== e) raw.push(path);
      }
    }
    for (const g of r.globs)
      for (const s of globSamples(g)) raw.push(s, ...(kind === 'resource' ? [`${s}?toolgate-diff`] : []));
  }
  raw.push(kind === 'resource' ? 'toolgate-diff://unnamed/item' : 'other_prompt');
  const out = new Set<string>();
  for (const key of raw) {
    if (kind === 'prompt') {
      out.add(key);
      continue;
    }
    const normal = normalResourceUri(key);
    if (normal.ok) out.add(normal.uri);
  }
  return [...out];
}

function verdictOf(side: ItemSide, e: PolicyEvaluation, lineOf: (info: ItemRuleInfo) => number | null): DiffVerdict {
  const info = e.rule ? side.items.rules.find((r) => r.name === e.rule!.name) : undefined;
  return {
    effect: e.result,
    stage: 'policy',
    by: e.by,
    rule: e.rule?.name ?? null,
    line: info ? lineOf(info) : null,
    layer: null,
    reason:
      e.by === 'rule_error'
        ? e.error
        : e.by === 'fallback'
          ? `no ${side.items.kind} rule matches: the fallback decides`
          : (info?.reason ?? `rule ${JSON.stringify(e.rule!.name)} matches`),
  };
}

function differ(a: PolicyEvaluation, b: PolicyEvaluation, oldSide: ItemSide, newSide: ItemSide): boolean {
  if (a.result !== b.result) return true;
  if (a.result !== 'ask') return false;
  const ra = a.rule ? oldSide.enforced.find((r) => r.info.name === a.rule!.name) : undefined;
  const rb = b.rule ? newSide.enforced.find((r) => r.info.name === b.rule!.name) : undefined;
  if (ra === undefined || rb === undefined) return (ra === undefined) !== (rb === undefined);
  return !(ra.info.name === rb.info.name || ra.fingerprint === rb.fingerprint);
}

function kindOf(o: PermissionResult, n: PermissionResult): Pick<DiffChange, 'kind' | 'direction'> {
  if (o === n) return { kind: 'ask-rule', direction: 'other' };
  if (n === 'allow') return { kind: 'allowed', direction: 'widen' };
  if (n === 'deny') return { kind: 'denied', direction: 'narrow' };
  return { kind: 'asked', direction: o === 'deny' ? 'widen' : 'narrow' };
}

const ANY = { agents: 'any', tenants: 'any', scopes: 'any' } as const;

function freshNamespace(taken: ReadonlySet<string>): string {
  for (let i = 0; ; i++) {
    const ns = i === 0 ? 'other_upstream' : `other_upstream_${i}`;
    if (!taken.has(ns)) return ns;
  }
}

/** Compares the `resources:` or the `prompts:` rules of the two files. */
async function diffKind(ctx: DiffContext, kind: ItemKind): Promise<void> {
  const prints = new Map<string, number>();
  const oldSide = itemRules(kind, ctx.old, prints);
  const newSide = itemRules(kind, ctx.new, prints);
  const sameList =
    oldSide.fallback === newSide.fallback &&
    oldSide.enforced.length === newSide.enforced.length &&
    oldSide.enforced.every((r, i) => r.fingerprint === newSide.enforced[i]!.fingerprint);
  if (sameList) return;
  const list = kind === 'resource' ? 'resources:' : 'prompts:';
  const label = kind === 'resource' ? 'read' : 'get';
  const lineOf =
    (side: SideModel) =>
    (info: ItemRuleInfo): number | null => {
      try {
        return side.set.file === null ? null : info.position.line;
      } catch {
        return null;
      }
    };
  const all = [...oldSide.enforced, ...newSide.enforced];
  const namespaces = new Set<string>();
  for (const r of all) if (r.info.namespace !== null) namespaces.add(r.info.namespace);
  const nsList = [...namespaces, freshNamespace(namespaces)];
  const keys = candidateKeys(kind, all);
  const fresh = nsList[nsList.length - 1]!;
  const nsText = (ns: string): string =>
    ns === fresh ? `of an upstream no rule names (${JSON.stringify(ns)})` : `of upstream ${JSON.stringify(ns)}`;
  const found = new Map<string, { change: DiffChange; more: number }>();
  const unsure: DiffChange[] = [];
  let probes = 0;
  let stopped: string | null = null;
  const add = (change: DiffChange): void => {
    const key = `${change.old.effect}:${change.old.rule}|${change.new.effect}:${change.new.rule}`;
    const had = found.get(key);
    if (had) had.more++;
    else found.set(key, { change, more: 0 });
  };
  const changeOf = (example: DiffExample, a: PolicyEvaluation, b: PolicyEvaluation, where: string): DiffChange => ({
    ...kindOf(a.result, b.result),
    tool: kind,
    item: kind,
    others: false,
    who: ANY,
    where,
    old: verdictOf(oldSide, a, lineOf(ctx.old)),
    new: verdictOf(newSide, b, lineOf(ctx.new)),
    example,
  });
  outer: for (const ns of nsList) {
    for (const key of keys) {
      if (++probes > MAX_PROBES || Date.now() > ctx.deadline) {
        stopped =
          probes > MAX_PROBES
            ? `more than ${MAX_PROBES.toLocaleString('en')} example ${label}s to compare`
            : 'the diff reached its time limit';
        break outer;
      }
      if (kind === 'resource') {
        const args = { namespace: ns, uri: key, action: 'read' };
        const a = oldSide.items.policy.evaluate(oldSide.tool, args);
        const b = newSide.items.policy.evaluate(newSide.tool, args);
        if (differ(a, b, oldSide, newSide))
          add(changeOf({ tool: kind, arguments: args, who: {} }, a, b, `${list} the read of ${key} ${nsText(ns)}`));
        continue;
      }
      // A prompt: the rules that select it by namespace and name, searched over its arguments.
      const selected = (side: ItemSide): Entry[] =>
        side.enforced
          .filter((r) => r.info.selects(ns, key))
          .map((r) => ({ rule: r.diffRule, byTags: false, byName: null }));
      const result = search(
        { entries: selected(oldSide), fallback: oldSide.fallback },
        { entries: selected(newSide), fallback: newSide.fallback },
        { taken: [], validName: () => true, budget: ctx.budget },
      );
      ctx.searched++;
      for (const leaf of [...result.leaves, ...result.uncertain]) {
        const built = argumentsOf(leaf.box);
        const given = built.args['arguments'];
        const args = {
          namespace: ns,
          name: key,
          action: 'get',
          arguments: typeof given === 'object' && given !== null ? (given as Record<string, unknown>) : {},
        };
        const a = oldSide.items.policy.evaluate(oldSide.tool, args);
        const b = newSide.items.policy.evaluate(newSide.tool, args);
        const where = `${list} the get of prompt ${key} ${nsText(ns)}${whereText(leaf.box) === 'every call' ? '' : `, where ${whereText(leaf.box)}`}`;
        const claims = (v: Verdict, e: PolicyEvaluation): boolean =>
          v.effect === e.result && (v.rule === null ? e.rule === null : e.rule !== null && v.rule.name === e.rule.name);
        if (leaf.box.unknown.length === 0 && built.ok && claims(leaf.old, a) && claims(leaf.new, b))
          add(changeOf({ tool: kind, arguments: args, who: {} }, a, b, where));
        else unsure.push(changeOf({ tool: kind, arguments: args, who: {} }, a, b, where));
      }
      if (result.exhausted) stopped = `the rules for prompt ${key} have more regions than the search budget covers`;
    }
  }
  for (const { change, more } of found.values())
    ctx.changes.push(more > 0 ? { ...change, where: `${change.where} (and ${more} more alike)` } : change);
  for (const u of unsure)
    ctx.uncertain.push({
      direction: u.direction,
      tool: kind,
      item: kind,
      others: false,
      who: ANY,
      where: u.where,
      reason: `a condition of the ${list} rules could not be decided for this ${label} (example ${JSON.stringify(u.example.arguments)})`,
      old: u.old,
      new: u.new,
    });
  const globs = [...new Set(all.flatMap((r) => r.globs))];
  const direction = editDirection(
    oldSide.enforced.map((r) => ({ fingerprint: r.fingerprint, result: r.info.result, tests: r.info.tests.length })),
    newSide.enforced.map((r) => ({ fingerprint: r.fingerprint, result: r.info.result, tests: r.info.tests.length })),
    oldSide.fallback,
    newSide.fallback,
  );
  const exhaustive = complete(kind, all, new Set(keys));
  if (stopped !== null || !exhaustive)
    ctx.uncertain.push({
      direction: direction ?? 'other',
      tool: kind,
      item: kind,
      others: false,
      who: ANY,
      where: `${list} ${label}s other than the ${probes.toLocaleString('en')} example${probes === 1 ? '' : 's'} compared`,
      reason:
        stopped ??
        (globs.length === 0
          ? `the ${list} rules name one URI in every spelling of its case; the diff compared each pattern's own URIs and their variants, not every URI`
          : undefined) ??
        `the ${list} rules use ${globs.length === 1 ? 'the glob' : 'globs'} ${globs
          .slice(0, 5)
          .map((g) => JSON.stringify(g))
          .join(
            ', ',
          )}${globs.length > 5 ? ` and ${globs.length - 5} more` : ''}; the diff compared each pattern's own ${kind === 'resource' ? 'URIs' : 'names'}, samples of each glob and one no rule names, not every ${kind === 'resource' ? 'URI' : 'name'}`,
      old: null,
      new: null,
    });
}

/** Compares the `resources:` and `prompts:` rules of the two files (see the file's comment). */
export async function diffItems(ctx: DiffContext): Promise<void> {
  await diffKind(ctx, 'resource');
  await diffKind(ctx, 'prompt');
}
