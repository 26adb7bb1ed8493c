/**
 * What a card says first: a one-line summary of what is decided (a per-tool template such as
 * `"Refund {amount} EUR on order {order}"`, else the tool and its two most telling arguments), the risk
 * (the asking rule's, raised by argument thresholds), and the words on the approve button ("Approve
 * refund"). Everything here is plain text: the page escapes it and marks hidden characters like any other
 * text from a request.
 */
import { canonical, describe } from '../names.js';
import type { PendingRecord } from '../stores/types.js';

/** How risky a call is, as a card shows it. */
export type Risk = 'low' | 'medium' | 'high';

const RISKS: readonly Risk[] = ['low', 'medium', 'high'];

/** How one tool's cards read. */
export interface ToolCard {
  /** The summary template: `{name}` is the argument `name` (`{a.b}` a nested one; `{{` a brace). */
  readonly summary?: string;
  /** The risk the arguments raise (thresholds such as "amount over 1000"), or null. */
  readonly risk?: (parameters: Readonly<Record<string, unknown>>) => Risk | null;
  /** The approve button's words. @default `Approve <canonical tool name>` (what runs) */
  readonly approve?: string;
}

/** `createInbox`'s `cards` option. */
export interface CardOptions {
  /** By tool name (compared in canonical form). */
  readonly tools?: Readonly<Record<string, ToolCard>>;
  /** The risk of the rule that asked, by rule name. */
  readonly rules?: Readonly<Record<string, Risk>>;
}

/** A card's risk and what set it. */
export interface CardRisk {
  readonly level: Risk;
  readonly why: string;
}

/** The compiled `cards` option. */
export interface Cards {
  summaryOf(record: PendingRecord): string;
  riskOf(record: PendingRecord): CardRisk | null;
  approveLabel(record: PendingRecord): string;
}

const MAX_VALUE = 80;
/** Argument names that usually say what a call does, most telling first. */
const TELLING = [
  'amount',
  'total',
  'sum',
  'price',
  'to',
  'recipient',
  'account',
  'iban',
  'email',
  'order',
  'id',
  'path',
  'file',
  'url',
  'uri',
  'query',
  'command',
  'name',
];

function clip(value: string): string {
  const chars = [...value];
  return chars.length > MAX_VALUE ? `${chars.slice(0, MAX_VALUE - 1).join('')}…` : value;
}

/** One argument's value as summary text. */
export function valueText(value: unknown): string {
  if (typeof value === 'string') return clip(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  try {
    return clip(JSON.stringify(value) ?? describe(value));
  } catch {
    return describe(value);
  }
}

function at(parameters: Readonly<Record<string, unknown>>, path: string): unknown {
  let value: unknown = parameters;
  for (const key of path.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** Fills `template` from `parameters`; an argument that is not there reads `?`. */
function fillTemplate(template: string, parameters: Readonly<Record<string, unknown>>): string {
  return template.replace(/\{\{|\}\}|\{([^{}]*)\}/g, (whole, name: string | undefined) => {
    if (whole === '{{') return '{';
    if (whole === '}}') return '}';
    const value = at(parameters, (name ?? '').trim());
    return value === undefined ? '?' : valueText(value);
  });
}

function score(key: string, value: unknown): number {
  const k = key.toLowerCase();
  const rank = TELLING.findIndex((t) => k === t || k.endsWith(`_${t}`) || k.endsWith(t));
  let s = rank === -1 ? 0 : 100 - rank;
  if (typeof value === 'number' || typeof value === 'boolean') s += 20;
  else if (typeof value === 'string') s += value.length <= MAX_VALUE ? 15 : 5;
  return s;
}

/** The fallback summary: the tool and its two most telling arguments (in their order). */
function fallbackSummary(toolName: string, parameters: Readonly<Record<string, unknown>>): string {
  const entries = Object.entries(parameters);
  const chosen = entries
    .map(([key, value], index) => ({ key, value, index, score: score(key, value) }))
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, 2)
    .sort((a, b) => a.index - b.index);
  return [toolName, ...chosen.map((c) => `${c.key} ${valueText(c.value)}`)].join(' · ');
}

function checkRisk(value: unknown, where: string): Risk {
  if (!RISKS.includes(value as Risk))
    throw new TypeError(`${where} must be 'low', 'medium' or 'high', got ${describe(value)}`);
  return value as Risk;
}

/** Compiles `createInbox`'s `cards` option; throws a TypeError naming what is wrong. */
export function cardsOf(options: CardOptions | undefined): Cards {
  const where = 'createInbox option "cards"';
  if (options !== undefined && (typeof options !== 'object' || options === null))
    throw new TypeError(`${where} must be an object, got ${describe(options)}`);
  const tools = new Map<string, ToolCard>();
  for (const [name, card] of Object.entries(options?.tools ?? {})) {
    const at = `${where}.tools[${JSON.stringify(name)}]`;
    if (typeof card !== 'object' || card === null) throw new TypeError(`${at} must be an object`);
    if (card.summary !== undefined && typeof card.summary !== 'string')
      throw new TypeError(`${at}.summary must be a string, got ${describe(card.summary)}`);
    if (card.risk !== undefined && typeof card.risk !== 'function')
      throw new TypeError(`${at}.risk must be a function of the arguments, got ${describe(card.risk)}`);
    if (card.approve !== undefined && (typeof card.approve !== 'string' || card.approve.trim() === ''))
      throw new TypeError(`${at}.approve must be a non-empty string, got ${describe(card.approve)}`);
    tools.set(canonical(name), card);
  }
  const rules = new Map<string, Risk>();
  for (const [name, risk] of Object.entries(options?.rules ?? {}))
    rules.set(name, checkRisk(risk, `${where}.rules[${JSON.stringify(name)}]`));
  const cardOf = (record: PendingRecord) => tools.get(canonical(record.canonical));
  return {
    summaryOf(record) {
      const template = cardOf(record)?.summary;
      if (template !== undefined) return fillTemplate(template, record.parameters);
      const given = (record as { summary?: unknown }).summary;
      if (typeof given === 'string' && given.trim() !== '') return clip(given);
      return fallbackSummary(record.toolName, record.parameters);
    },
    riskOf(record) {
      const found: CardRisk[] = [];
      const byRule = rules.get(record.rule);
      if (byRule) found.push({ level: byRule, why: `rule ${record.rule}` });
      const given = (record as { risk?: unknown }).risk;
      if (RISKS.includes(given as Risk)) found.push({ level: given as Risk, why: `rule ${record.rule}` });
      const threshold = cardOf(record)?.risk;
      if (threshold) {
        let level: Risk | null;
        try {
          level = threshold(record.parameters);
        } catch {
          // A threshold that cannot be judged raises the card, never lowers it.
          level = 'high';
        }
        if (level !== null && RISKS.includes(level)) found.push({ level, why: 'the arguments' });
      }
      if (found.length === 0) return null;
      return found.reduce((a, b) => (RISKS.indexOf(b.level) > RISKS.indexOf(a.level) ? b : a));
    },
    approveLabel(record) {
      // The consequence: what runs is the canonical tool, whatever spelling the call asked with.
      return cardOf(record)?.approve ?? `Approve ${record.canonical}`;
    },
  };
}
