/**
 * Limits that count a call differently: a limit added or removed for a tool, a tool newly selected or
 * left out, or its max, cost, window or counters changed. Each with an example call whose `explain`
 * lists the limit as claimed under each file.
 */
import { canonical } from '../../names.js';
import { parseWindow, type LimitRule } from '../../limits/limiter.js';
import type { DiffContext } from './context.js';
import { stableJson } from './rules.js';
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

/** Which way a limit's settings moved for one call. */
function direction(a: DiffLimit, b: DiffLimit): DiffDirection | null {
  const ways = new Set<DiffDirection>();
  const cmp = (wider: boolean, narrower: boolean): void => {
    if (wider) ways.add('widen');
    if (narrower) ways.add('narrow');
  };
  // A max the tenant's plan does not give refuses every call: below any number.
  const ma = a.max ?? -1;
  const mb = b.max ?? -1;
  cmp(mb > ma, mb < ma);
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

/** The static settings that decide how a limit counts one tool's calls (its max aside, read per tenant). */
function staticOf(c: Compiled, tool: string): string {
  const costs = new Map(Object.entries(c.rule.costs ?? {}).map(([k, v]) => [canonical(k), v]));
  return stableJson({
    cost: costs.get(tool) ?? c.rule.cost ?? 1,
    window: c.rule.window === undefined ? null : parseWindow(c.rule.window),
    per: [...(c.rule.per ?? [])].sort(),
  });
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
  const od = ctx.old.set.data.tenants ?? {};
  const nd = ctx.new.set.data.tenants ?? {};
  const tenants = [...new Set([...Object.keys(od), ...Object.keys(nd)])];

  for (const name of limitNames) {
    const a = oldLimits.get(name);
    const b = newLimits.get(name);
    // Tenants whose max of this limit may differ: their own entry for it, or the plan value it reads.
    const planName = (c: Compiled | undefined): string | null =>
      c && typeof c.rule.max === 'object' ? c.rule.max.plan : null;
    const perTenant = tenants.filter(
      (t) =>
        od[t]?.limits?.[name] !== nd[t]?.limits?.[name] ||
        (planName(a) !== null && od[t]?.plan?.[planName(a)!] !== nd[t]?.plan?.[planName(a)!]) ||
        (planName(b) !== null && od[t]?.plan?.[planName(b)!] !== nd[t]?.plan?.[planName(b)!]),
    );
    const maxMoved = a !== undefined && b !== undefined && stableJson(a.rule.max) !== stableJson(b.rule.max);
    const reported = new Set<string>();
    for (const probe of probes) {
      const inOld = a !== undefined && selects(a, probe.tool, tagsUnder('old', probe));
      const inNew = b !== undefined && selects(b, probe.tool, tagsUnder('new', probe));
      if (!inOld && !inNew) continue;
      const staticMoved = inOld && inNew && staticOf(a, probe.tool) !== staticOf(b, probe.tool);
      const who: (string | undefined)[] =
        !inOld || !inNew || staticMoved
          ? [undefined]
          : maxMoved
            ? // A number moved alike for every tenant without its own entry; a plan reference changed: each tenant.
              planName(a) !== null || planName(b) !== null
              ? [undefined, ...tenants]
              : [undefined, ...perTenant]
            : perTenant;
      for (const tenant of who) {
        const what = `${inOld && inNew ? 'changed' : inOld ? 'no longer counts' : 'now counts'}:${tenant ?? ''}`;
        if (reported.has(what)) continue;
        const example: DiffExample = {
          tool: probe.tool,
          arguments: {},
          who: tenant === undefined ? {} : { tenant },
          ...(probe.own && probe.own.length > 0 ? { ownTags: probe.own } : {}),
        };
        // The max, cost and window explain shows for this call under each file: the limit as it counts it.
        const [la, lb] = await Promise.all([ctx.old.replay.limits(example), ctx.new.replay.limits(example)]);
        const at = (got: ReturnType<typeof la.get>, c: Compiled | undefined): DiffLimit | null =>
          got === undefined || c === undefined
            ? null
            : { max: got.max, cost: got.cost, windowMs: got.windowMs, per: [...(c.rule.per ?? [])].sort() };
        const sa = at(la.get(name), a);
        const sb = at(lb.get(name), b);
        if ((sa !== null) !== inOld || (sb !== null) !== inNew) continue;
        const dir = sa && sb ? direction(sa, sb) : sa ? 'widen' : 'narrow';
        if (dir === null) continue;
        reported.add(what);
        const [va, vb] = await Promise.all([ctx.old.replay.verdict(example), ctx.new.replay.verdict(example)]);
        ctx.changes.push({
          kind: 'limit',
          direction: dir,
          tool: probe.tool,
          others: probe.tool === other,
          who: { agents: 'any', tenants: tenant === undefined ? 'any' : [tenant], scopes: 'any' },
          where:
            sa && sb
              ? `limit ${JSON.stringify(name)} counts the calls with other settings${tenant === undefined ? '' : ` for tenant ${JSON.stringify(tenant)}`}`
              : `limit ${JSON.stringify(name)} ${sa ? 'no longer counts' : 'now counts'} calls to this tool${probe.own && probe.own.length > 0 ? ` (carrying the tag ${probe.own.join(', ')})` : ''}`,
          old: va,
          new: vb,
          example,
          limit: { name, old: sa, new: sb },
        });
      }
    }
  }
}
