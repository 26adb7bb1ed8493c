/**
 * Replaying an example call through `explain` (the gate's own precheck, on the file's stub registry): what
 * the diff reports is what explain decides. A tool the file does not describe carries its own tags: the
 * stub gets the example's own tags for the replay.
 */
import { readFileSync } from 'node:fs';
import { EVENT_ID, getScalarValue, parseEvents } from 'js-yaml';
import { ConfigurationError } from '../../errors.js';
import { canonical } from '../../names.js';
import type { ToolRegistry } from '../../registry.js';
import { ToolTag, type Tool } from '../../tool.js';
import { explainCall, previewDecision } from '../explain.js';
import type { PolicySet } from '../policy-set.js';
import type { DiffExample, DiffVerdict, DiffWho } from './types.js';

const PREDEFINED = new Set<string>(Object.values(ToolTag));

function refuse(): never {
  throw new ConfigurationError('this tool is declared by a policy file only; it decides calls and never runs');
}

/** One side's stub registry, built once, and the tools the file describes (their tags are the file's). */
export class Replayer {
  readonly set: PolicySet;
  #registry: ToolRegistry | null = null;
  readonly #described: ReadonlySet<string>;
  readonly #lines = new Map<string, number>();

  constructor(set: PolicySet) {
    this.set = set;
    this.#described = new Set(set.tools.map((t) => t.canonicalName));
  }

  get registry(): ToolRegistry {
    return (this.#registry ??= this.set.registry({ confusables: 'off' }));
  }

  describes(form: string): boolean {
    return this.#described.has(form);
  }

  #ruleLines: readonly number[] | null | undefined;

  lineOf(rule: string | null): number | null {
    if (rule === null) return null;
    let line = this.#lines.get(rule);
    if (line === undefined) {
      const info = this.set.rules.find((r) => r.name === rule);
      this.#ruleLines ??= this.set.file === null ? null : ruleLines(this.set.file);
      line = info ? (this.#ruleLines?.[info.index] ?? info.position.line) : 0;
      this.#lines.set(rule, line);
    }
    return line || null;
  }

  /** Runs `fn` with the example's tool registered as it is under this file (its own tags where undescribed). */
  async #withTool<T>(example: DiffExample, fn: (registry: ToolRegistry) => Promise<T>): Promise<T> {
    const registry = this.registry;
    const form = canonical(example.tool);
    const existing = registry.get(form);
    const own = this.describes(form) ? null : (example.ownTags ?? []);
    if (own === null || (existing && own.length === 0 && existing.metadata.allTags.size === 0)) return fn(registry);
    if (existing) registry.unregister(form);
    registry.register({
      name: example.tool,
      parameters: { type: 'object' },
      metadata: {
        tags: own.filter((t) => PREDEFINED.has(t)) as ToolTag[],
        customTags: own.filter((t) => !PREDEFINED.has(t)),
      },
      execute: refuse,
    });
    try {
      return await fn(registry);
    } finally {
      registry.unregister(form);
      if (existing) registry.register(existing);
    }
  }

  /** How this file decides the example, as explain does. */
  async verdict(example: DiffExample): Promise<DiffVerdict> {
    return this.#withTool(example, async (registry) => {
      try {
        const d = await previewDecision(
          this.set,
          { name: example.tool, arguments: example.arguments },
          who(example.who),
          registry,
        );
        return {
          effect: d.effect,
          stage: d.stage,
          by: d.by,
          rule: d.rule,
          line: d.by === 'rule' || d.by === 'rule_error' ? this.lineOf(d.rule) : null,
          layer: d.layer,
          reason: d.reason,
        };
      } catch (error) {
        if (!(error instanceof ConfigurationError)) throw error;
        return {
          effect: 'deny',
          stage: 'context',
          by: 'context',
          rule: null,
          line: null,
          layer: null,
          reason: error.message,
        };
      }
    });
  }

  /** The limits that select the example under this file: name → max, cost, window. */
  async limits(
    example: DiffExample,
  ): Promise<Map<string, { max: number | null; cost: number; windowMs: number | null }>> {
    return this.#withTool(example, async (registry) => {
      const explained = await explainCall(this.set, { name: example.tool, arguments: example.arguments }, {}, registry);
      return new Map(
        (explained.limits ?? []).map((l) => [l.limit, { max: l.max, cost: l.cost, windowMs: l.windowMs }]),
      );
    });
  }

  /** The tool as registered for the example (its parameters schema, for completing required arguments). */
  async tool(example: DiffExample): Promise<Tool | undefined> {
    return this.#withTool(example, async (registry) => registry.get(canonical(example.tool)));
  }
}

/**
 * The line of each rule of a policy file, from js-yaml's positioned parser events (the fast reader the
 * loader uses): a rule's `position` builds `yaml`'s positioned Document instead, seconds for a
 * 10,000-rule file. Null when the file cannot be read again or is not laid out as expected.
 */
function ruleLines(file: string): number[] | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
    const events = parseEvents(text, {});
    const starts: number[] = [0];
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
    const lineAt = (offset: number): number => {
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid]! <= offset) lo = mid;
        else hi = mid - 1;
      }
      return lo + 1;
    };
    // document, top mapping, then key/value pairs: find the key "rules" and read its sequence's items.
    let i = events.findIndex((e) => e.type === EVENT_ID.MAPPING);
    if (i < 0) return null;
    i++;
    const skip = (at: number): number => {
      let depth = 0;
      do {
        const e = events[at++]!;
        if (e.type === EVENT_ID.MAPPING || e.type === EVENT_ID.SEQUENCE) depth++;
        else if (e.type === EVENT_ID.POP) depth--;
      } while (depth > 0 && at < events.length);
      return at;
    };
    while (i < events.length && events[i]!.type !== EVENT_ID.POP) {
      const key = events[i]!;
      const isRules = key.type === EVENT_ID.SCALAR && getScalarValue(text, key) === 'rules';
      i++;
      if (!isRules) {
        i = skip(i);
        continue;
      }
      const seq = events[i]!;
      if (seq.type !== EVENT_ID.SEQUENCE) return null;
      const lines: number[] = [];
      i++;
      while (i < events.length && events[i]!.type !== EVENT_ID.POP) {
        const item = events[i]!;
        lines.push(lineAt(item.type === EVENT_ID.MAPPING ? item.start : 0));
        i = skip(i);
      }
      return lines;
    }
    return null;
  } catch {
    return null;
  }
}

function who(w: DiffWho): { agent?: string; tenant?: string; scopes?: readonly string[] } {
  return {
    ...(w.agent !== undefined ? { agent: w.agent } : {}),
    ...(w.tenant !== undefined ? { tenant: w.tenant } : {}),
    ...(w.scopes !== undefined ? { scopes: w.scopes } : {}),
  };
}

/**
 * Arguments completed with what a JSON Schema requires and the example leaves out: the first of an enum,
 * the const, or a plain value of the type (recursively for objects). The example's own values stay.
 */
export function completeArguments(schema: unknown, args: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...args };
  if (typeof schema !== 'object' || schema === null) return out;
  const s = schema as { required?: unknown; properties?: Record<string, unknown> };
  if (!Array.isArray(s.required)) return out;
  for (const key of s.required) {
    if (typeof key !== 'string' || Object.hasOwn(out, key)) continue;
    out[key] = sample(s.properties?.[key]);
  }
  return out;
}

function sample(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null) return '';
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s['enum']) && s['enum'].length > 0) return s['enum'][0];
  if (Object.hasOwn(s, 'const')) return s['const'];
  const type = Array.isArray(s['type']) ? (s['type'][0] as unknown) : s['type'];
  switch (type) {
    case 'string':
      return 'x'.repeat(typeof s['minLength'] === 'number' ? Math.max(1, s['minLength']) : 1);
    case 'number':
    case 'integer':
      return typeof s['minimum'] === 'number'
        ? s['minimum']
        : typeof s['exclusiveMinimum'] === 'number'
          ? Math.floor(s['exclusiveMinimum']) + 1
          : 0;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'null':
      return null;
    case 'object':
      return completeArguments(s, {});
    default:
      return '';
  }
}
