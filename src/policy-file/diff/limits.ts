/**
 * Limits that count a call differently: a limit added or removed for a tool, a tool newly selected or
 * left out, or its max, cost, window or counters changed. Each with an example call whose `explain`
 * lists the limit as claimed under each file.
 */
import { canonical } from '../../names.js';
import { parseWindow, type LimitRule } from '../../limits/limiter.js';
import type { DiffContext } from './diff.js';
import type { DiffDirection, DiffExample, DiffLimit } from './types.js';

interface Compiled {
  readonly rule: LimitRule;
  readonly tools: ReadonlySet<string> | null;
  readonly tags: ReadonlySet<string> | null;
}

function compiled(rule: LimitRule): Compiled {
  return {
    rule,
    tools: rule.tools ? new Set(rule.tools.map(canonical)) : null,
    tags: rule.tags ? new Set(rule.tags) : null,
  };
}

function selects(c: Compiled, tool: string, tags: ReadonlySet<string>): boolean {
  if (c.tools === null && c.tags === null) return true;
  if (c.tools?.has(tool)) return true;
  return c.tags !== null && [...tags].some((t) => c.tags!.has(t));
}

function settingsOf(c: Compiled, tool: string): DiffLimit {
  const costs = new Map(Object.entries(c.rule.costs ?? {}).map(([k, v]) => [canonical(k), v]));
  return {
    max: c.rule.max,
    cost: costs.get(tool) ?? c.rule.cost ?? 1,
    windowMs: c.rule.window === undefined ? null : parseWindow(c.rule.window),
    per: [...(c.rule.per ?? [])].sort(),
  };
}

/** Which way a limit's settings moved for one call. */
function direction(a: DiffLimit, b: DiffLimit): DiffDirection | null {
  const ways = new Set<DiffDirection>();
  const cmp = (wider: boolean, narrower: boolean): void => {
    if (wider) ways.add('widen');
    if (narrower) ways.add('narrow');
  };
  cmp(b.max > a.max, b.max < a.max);
  cmp(b.cost < a.cost, b.cost > a.cost);
  const wa = a.windowMs ?? Infinity;
  const wb = b.windowMs ?? Infinity;
  cmp(wb < wa, wb > wa);
  if (a.per.join() !== b.per.join()) {
    // More dimensions: more counters, each counting fewer calls.
    const finer = a.per.every((d) => b.per.includes(d));
    const coarser = b.per.every((d) => a.per.includes(d));
    cmp(finer, coarser);
    if (!finer && !coarser) ways.add('other');
  }
  if (ways.size === 0) return null;
  return ways.size === 1 ? [...ways][0]! : 'other';
}

export async function diffLimits(ctx: DiffContext, names: readonly string[]): Promise<void> {
  const oldLimits = new Map(ctx.old.set.limits.map((l) => [l.name, compiled(l)]));
  const newLimits = new Map(ctx.new.set.limits.map((l) => [l.name, compiled(l)]));
  const limitNames = [...new Set([...oldLimits.keys(), ...newLimits.keys()])];
  if (limitNames.length === 0) return;
  const limitTags = [...new Set([...oldLimits.values(), ...newLimits.values()].flatMap((c) => [...(c.tags ?? [])]))];
  const other = ['other_tool', 'other_tool_1', 'other_tool_2'].find((n) => !names.includes(n))!;
  // A call's tool and, where a file does not describe it, the tags it carries of its own.
  const probes: { tool: string; own: readonly string[] | null }[] = [];
  for (const tool of [...names, other]) {
    const described = ctx.old.described.has(tool) && ctx.new.described.has(tool);
    probes.push({ tool, own: described ? null : [] });
    if (!described) for (const t of limitTags) probes.push({ tool, own: [t] });
  }
  const tagsUnder = (side: 'old' | 'new', probe: (typeof probes)[number]): ReadonlySet<string> =>
    ctx[side].described.get(probe.tool)?.metadata.allTags ?? new Set(probe.own ?? []);

  for (const name of limitNames) {
    const a = oldLimits.get(name);
    const b = newLimits.get(name);
    const reported = new Set<string>();
    for (const probe of probes) {
      const inOld = a !== undefined && selects(a, probe.tool, tagsUnder('old', probe));
      const inNew = b !== undefined && selects(b, probe.tool, tagsUnder('new', probe));
      if (!inOld && !inNew) continue;
      const sa = inOld ? settingsOf(a, probe.tool) : null;
      const sb = inNew ? settingsOf(b, probe.tool) : null;
      const dir = sa && sb ? direction(sa, sb) : sa ? 'widen' : 'narrow';
      if (dir === null) continue;
      const what = sa && sb ? 'changed' : sa ? 'no longer counts' : 'now counts';
      if (reported.has(what)) continue;
      const example: DiffExample = {
        tool: probe.tool,
        arguments: {},
        who: {},
        ...(probe.own && probe.own.length > 0 ? { ownTags: probe.own } : {}),
      };
      const [la, lb] = await Promise.all([ctx.old.replay.limits(example), ctx.new.replay.limits(example)]);
      const agrees = (got: ReturnType<typeof la.get>, want: DiffLimit | null): boolean =>
        want === null ? got === undefined : got !== undefined && got.max === want.max && got.cost === want.cost;
      if (!agrees(la.get(name), sa) || !agrees(lb.get(name), sb)) continue;
      reported.add(what);
      const [va, vb] = await Promise.all([ctx.old.replay.verdict(example), ctx.new.replay.verdict(example)]);
      const others = probe.tool === other;
      ctx.changes.push({
        kind: 'limit',
        direction: dir,
        tool: probe.tool,
        others,
        who: { agents: 'any', tenants: 'any', scopes: 'any' },
        where:
          what === 'changed'
            ? `limit ${JSON.stringify(name)} counts the calls with other settings`
            : `limit ${JSON.stringify(name)} ${what} calls to this tool${probe.own && probe.own.length > 0 ? ` (carrying the tag ${probe.own.join(', ')})` : ''}`,
        old: va,
        new: vb,
        example,
        limit: { name, old: sa, new: sb },
      });
    }
  }
}
