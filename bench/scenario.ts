/**
 * The benchmark's scenario at size N: N tools with tags, three allowlist layers, N ordered rules (by
 * name, by tag, with and without argument conditions) and a mix of calls that reaches every layer and
 * both rule outcomes. Plain data: every engine in bench/engines/ encodes the same scenario its own way.
 *
 * Deterministic (a seeded PRNG), so a run can be repeated and a mismatch reproduced.
 */
import { ToolTag } from '../src/index.js';

export type Effect = 'allow' | 'deny';

export type Condition =
  | { readonly kind: 'none' }
  | { readonly kind: 'amount_above'; readonly value: number }
  | { readonly kind: 'mode_is'; readonly value: string };

export type Selector =
  { readonly kind: 'name'; readonly name: string } | { readonly kind: 'tag'; readonly tag: string };

export interface RuleSpec {
  readonly id: string;
  readonly selector: Selector;
  readonly condition: Condition;
  readonly effect: Effect;
}

export interface ToolSpec {
  readonly name: string;
  readonly tags: readonly ToolTag[];
  readonly customTags: readonly string[];
}

export interface CallArguments {
  readonly amount: number;
  readonly mode: string;
  readonly [key: string]: unknown;
}

/** A call as the gate receives it once read (the shape of NormalizedCall), arguments already an object. */
export interface BenchCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: CallArguments;
  readonly format: 'toolgate';
}

export interface Scenario {
  readonly size: number;
  readonly tools: readonly ToolSpec[];
  /** The agent layer, the tenant layer and the caller layer: frozen lists of tool names. */
  readonly declared: readonly string[];
  readonly tenant: readonly string[];
  readonly caller: readonly string[];
  readonly agent: string;
  readonly tenantId: string;
  readonly callerId: string;
  /** In policy order; the first that matches decides, and a call no rule matches is denied. */
  readonly rules: readonly RuleSpec[];
  readonly calls: readonly BenchCall[];
}

/**
 * Why a call was decided as it was, in one vocabulary for every engine: the refusing layer
 * (`layer:not_declared` also covers an unknown name), the deciding rule, or the deny fallback.
 */
export type Because = `layer:${'not_declared' | 'tenant' | 'caller'}` | `rule:${string}` | 'fallback';

export const MODES = ['read', 'write', 'admin'] as const;
const NAMESPACES = ['crm', 'billing', 'files', 'mail'] as const;

/** mulberry32: small, fast, good enough to spread a scenario. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The full-width spelling of a printable ASCII name ("ｃｒｍ：ｏｐ_１"): a different string with the same canonical form. */
export function fullWidth(name: string): string {
  return name.replace(/[\x21-\x7e]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));
}

export interface ScenarioOptions {
  /** How many calls in the mix (rounded up to a power of two, so a loop can mask its index). @default 2048 */
  readonly calls?: number;
  /** @default 1 */
  readonly seed?: number;
}

export function buildScenario(size: number, options: ScenarioOptions = {}): Scenario {
  if (!Number.isInteger(size) || size < 4)
    throw new TypeError(`buildScenario: size must be an integer >= 4, got ${size}`);
  const random = prng(options.seed ?? 1);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const teams = Math.max(2, Math.ceil(size / 10));
  const width = String(size - 1).length;

  const tools: ToolSpec[] = [];
  for (let i = 0; i < size; i++) {
    const tags: ToolTag[] = [];
    if (i % 3 === 0) tags.push(ToolTag.READ_ONLY);
    if (i % 5 === 1) tags.push(ToolTag.DESTRUCTIVE);
    if (i % 5 === 2) tags.push(ToolTag.NETWORK);
    if (i % 97 === 4) tags.push(ToolTag.PRIVILEGED);
    tools.push({
      name: `${NAMESPACES[i % NAMESPACES.length]}:op_${String(i).padStart(width, '0')}`,
      tags,
      customTags: [`team-${i % teams}`],
    });
  }
  // Each layer cuts a tenth of the tools, a different tenth each.
  const declared = Object.freeze(tools.filter((_, i) => i % 10 !== 9).map((t) => t.name));
  const tenant = Object.freeze(tools.filter((_, i) => i % 10 !== 8).map((t) => t.name));
  const caller = Object.freeze(tools.filter((_, i) => i % 10 !== 7).map((t) => t.name));

  const rules: RuleSpec[] = [
    {
      id: 'deny_privileged',
      selector: { kind: 'tag', tag: ToolTag.PRIVILEGED },
      condition: { kind: 'none' },
      effect: 'deny',
    },
    {
      id: 'deny_big_destructive',
      selector: { kind: 'tag', tag: ToolTag.DESTRUCTIVE },
      condition: { kind: 'amount_above', value: 900 },
      effect: 'deny',
    },
    {
      id: 'allow_reads',
      selector: { kind: 'tag', tag: ToolTag.READ_ONLY },
      condition: { kind: 'mode_is', value: 'read' },
      effect: 'allow',
    },
  ];
  for (let i = rules.length; i < size; i++) {
    const selector: Selector =
      random() < 0.5
        ? { kind: 'name', name: pick(tools).name }
        : { kind: 'tag', tag: `team-${Math.floor(random() * teams)}` };
    const c = random();
    const condition: Condition =
      c < 0.25
        ? { kind: 'none' }
        : c < 0.65
          ? { kind: 'amount_above', value: Math.floor(random() * 1000) }
          : { kind: 'mode_is', value: pick(MODES) };
    rules.push({ id: `r${i}`, selector, condition, effect: random() < 0.5 ? 'allow' : 'deny' });
  }

  const count = 2 ** Math.ceil(Math.log2(Math.max(2, options.calls ?? 2048)));
  const calls: BenchCall[] = [];
  for (let k = 0; k < count; k++) {
    const r = random();
    const tool = pick(tools).name;
    // Most calls name a registered tool (a tenth each is then cut by one layer); some use another
    // spelling of it; some name no tool at all.
    const name = r < 0.8 ? tool : r < 0.88 ? tool.toUpperCase() : r < 0.94 ? fullWidth(tool) : `unknown:op_${k}`;
    calls.push({
      id: `call_${k}`,
      name,
      arguments: { amount: Math.floor(random() * 1001), mode: pick(MODES) },
      format: 'toolgate',
    });
  }
  return {
    size,
    tools,
    declared,
    tenant,
    caller,
    agent: 'concierge',
    tenantId: 'acme',
    callerId: 'bob',
    rules,
    calls,
  };
}

/** True when `condition` holds for `args` (the one reading every engine's encoding must agree with). */
export function holds(condition: Condition, args: CallArguments): boolean {
  switch (condition.kind) {
    case 'none':
      return true;
    case 'amount_above':
      return args.amount > condition.value;
    case 'mode_is':
      return args.mode === condition.value;
  }
}
