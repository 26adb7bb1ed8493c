/**
 * The gate decides as it did before the issue-25 pass on the common path (one Decision builder, a joint slot per
 * form, shared validators, JSON text parsed in place): on seeded random registries, layers, rules and
 * calls — names in other spellings, arguments as objects, JSON text, getters, proxies, `toJSON`, nested values,
 * cycles, `"__proto__"` keys, caller mutation after the call — every Decision (its fields in their order, frozen),
 * every result, what the tool received and how often each getter and trap ran equal the record made by the code
 * before that pass (`decisions-same.json`: a short SHA-256 per case, written by `TOOLGATE_WRITE_GOLDEN=1` on
 * commit f7c3f2c's src/).
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defineTool, PermissionPolicy, ToolRegistry, type GateContext } from '../../src/index.js';
import { prng } from '../../bench/scenario.js';

const GOLDEN = new URL('./decisions-same.json', import.meta.url);

const TOOLS = ['search', 'refund', 'delete_all', 'crm:read', 'notes'];
const FORMS = [
  ['search', 'Search', 'ｓｅａｒｃｈ'],
  ['refund', 'REFUND'],
  ['delete_all'],
  ['crm:read', 'CRM:Read'],
  ['notes'],
  ['nope'],
];
const SPELLINGS = [
  'search',
  'Search',
  'REFUND',
  'refund',
  'ｓｅａｒｃｈ',
  'delete_all',
  'crm:read',
  'CRM:Read',
  'notes',
  'nope',
  '',
];

/** A random case: its registry, context, call and what was read of its arguments. */
function scenario(seed: number): () => Promise<unknown> {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const sub = (items: readonly string[]): string[] => items.filter(() => random() < 0.7);
  const reads: string[] = [];
  const seen: unknown[] = [];
  const registry = new ToolRegistry();
  for (const name of TOOLS) {
    const kind = pick(['json', 'json', 'strict', 'none']);
    registry.register(
      defineTool({
        name,
        metadata: { tags: name === 'delete_all' ? ['destructive'] : [] },
        parameters:
          kind === 'strict'
            ? { type: 'object', properties: { amount: { type: 'integer', minimum: 0 } }, required: ['amount'] }
            : kind === 'json'
              ? { type: 'object', properties: { amount: { type: 'integer' }, mode: { type: 'string' } } }
              : { type: 'object' },
        execute:
          random() < 0.5
            ? async (args) => {
                seen.push(args);
                return `${name} ok`;
              }
            : (args) => {
                seen.push(args);
                return { name, n: Object.keys(args).length };
              },
      }),
    );
  }
  const rules = Array.from({ length: Math.floor(random() * 4) }, (_, i) => {
    const result = pick(['allow', 'allow', 'deny', 'ask'] as const);
    const above = random() < 0.4 ? Math.floor(random() * 4) : undefined;
    const select = random() < 0.3 ? { tags: ['destructive'] } : { tools: sub(TOOLS).concat(pick(TOOLS)) };
    return {
      name: `r${i}`,
      result,
      ...(random() < 0.5 ? { reason: `because ${i}` } : {}),
      ...select,
      ...(above === undefined
        ? {}
        : {
            match: (_t: unknown, p: Readonly<Record<string, unknown>>) => {
              if (p['mode'] === 'boom') throw new Error('rule broke');
              return Number(p['amount']) > above;
            },
          }),
    };
  });
  registry.setPermissionPolicy(
    new PermissionPolicy({ rules, fallback: pick(['allow', 'allow', 'deny', 'ask'] as const), version: `v${seed}` }),
  );
  if (random() < 0.5)
    registry.setPermissionHandler(async (request) => (request.parameters['amount'] === 2 ? 'deny' : 'allow'));
  // One spelling per form in a layer (two spellings of one form in a declaration are a configuration error).
  const layer = (): string[] | undefined =>
    random() < 0.4 ? undefined : FORMS.filter(() => random() < 0.85).map((spellings) => pick(spellings));
  const declared = layer();
  const tenant = layer();
  const caller = layer();
  const context: GateContext = {
    agent: declared ? { name: 'agent', tools: declared } : 'agent',
    ...(tenant ? { tenant: { id: 'acme', tools: tenant } } : {}),
    ...(caller ? { caller: { id: 'user', scopes: caller } } : {}),
    ...(random() < 0.3 ? { runId: 'run_1' } : {}),
  };
  const name = random() < 0.6 ? pick(TOOLS) : pick(SPELLINGS);
  const amount = Math.floor(random() * 5) - 1;
  const args = argumentsOf(pick(ARGUMENT_KINDS), amount, reads);
  const via = pick(['invoke', 'decide', 'openai'] as const);
  return async () => {
    const given = typeof args === 'function' ? args() : args;
    let outcome: unknown;
    try {
      outcome = await run(given);
    } catch (error) {
      outcome = { threw: (error as Error).message };
    }
    return { via, outcome: described(outcome), reads: [...reads], seen: seen.map(described) };
  };
  async function run(given: unknown): Promise<unknown> {
    let outcome: unknown;
    if (via === 'decide') outcome = await registry.decide({ id: 'c1', name, arguments: given }, context);
    else if (via === 'invoke') {
      const pending = registry.invoke(name, given, context);
      // The caller changes its object after the call: what was decided runs.
      if (given && typeof given === 'object' && !Object.isFrozen(given))
        try {
          (given as Record<string, unknown>)['amount'] = 99;
        } catch {
          // a getter without a setter
        }
      outcome = await pending;
    } else
      outcome = await registry.executeToolCalls(
        [{ id: 'c1', type: 'function', function: { name, arguments: textOf(given) } }],
        context,
      );
    return outcome;
  }
}

/** What an OpenAI call would carry for these arguments. */
function textOf(given: unknown): string {
  if (typeof given === 'string') return given;
  try {
    return JSON.stringify(given) ?? 'null';
  } catch {
    return '{"unserialisable": true}';
  }
}

const ARGUMENT_KINDS = [
  'plain',
  'plain',
  'plain',
  'two',
  'text',
  'bad-text',
  'nested',
  'getter',
  'proxy',
  'toJSON',
  'cycle',
  'proto',
  'bigint',
  'odd-values',
  'array',
  'null',
  'class',
  'symbol',
] as const;

function argumentsOf(kind: (typeof ARGUMENT_KINDS)[number], amount: number, reads: string[]): unknown {
  switch (kind) {
    case 'plain':
      return { amount };
    case 'two':
      return () => ({ amount, mode: amount === 3 ? 'boom' : 'read' });
    case 'text':
      return `{"amount":${amount},"mode":"read","big":1e400,"list":[1e400,{"x":"y"}]}`;
    case 'bad-text':
      return '{"amount": ';
    case 'nested':
      return () => ({ amount, filter: { tags: ['a', 'b', { deep: [1, null, true] }], at: new Date(0) }, n: NaN });
    case 'getter':
      return () => ({
        get amount() {
          reads.push('amount');
          return reads.length > 1 ? 1000 : amount;
        },
        mode: 'read',
      });
    case 'proxy':
      return () =>
        new Proxy(
          { amount, mode: 'read' },
          {
            get(target, key, receiver) {
              reads.push(`get ${String(key)}`);
              return Reflect.get(target, key, receiver);
            },
            ownKeys(target) {
              reads.push('ownKeys');
              return Reflect.ownKeys(target);
            },
            getOwnPropertyDescriptor(target, key) {
              reads.push(`gopd ${String(key)}`);
              return Reflect.getOwnPropertyDescriptor(target, key);
            },
            getPrototypeOf(target) {
              reads.push('getPrototypeOf');
              return Reflect.getPrototypeOf(target);
            },
          },
        );
    case 'toJSON':
      return () => ({
        toJSON(key: string) {
          reads.push(`toJSON ${key}`);
          return { amount, mode: 'read' };
        },
      });
    case 'cycle':
      return () => {
        const a: Record<string, unknown> = { amount };
        a['self'] = { back: a };
        return a;
      };
    case 'proto':
      return () => JSON.parse(`{"amount": ${amount}, "__proto__": {"admin": true}}`) as unknown;
    case 'bigint':
      return () => ({ amount: 10n });
    case 'odd-values':
      return () => ({
        amount,
        f: () => 1,
        u: undefined,
        s: Symbol('x'),
        inf: -Infinity,
        w: Object(5) as unknown,
        b: Object('x') as unknown,
      });
    case 'array':
      return [amount];
    case 'null':
      return null;
    case 'class':
      return () =>
        new (class Args {
          amount = amount;
          mode = 'read';
        })();
    case 'symbol':
      return () => ({ amount, [Symbol('hidden')]: 1 });
  }
}

/** A value as a comparable record: object keys in order, frozen-ness, no generated ids. */
function described(value: unknown): unknown {
  if (Array.isArray(value)) return { frozen: Object.isFrozen(value), items: value.map(described) };
  if (typeof value === 'object' && value !== null) {
    // The keys in their order (an object's shape), which toEqual alone does not compare.
    const out: Record<string, unknown> = { '·frozen': Object.isFrozen(value), '·keys': Object.keys(value).join() };
    for (const key of Object.keys(value)) {
      const item = (value as Record<string, unknown>)[key];
      out[key] =
        (key === 'callId' || key === 'id' || key === 'tool_call_id') && typeof item === 'string'
          ? '·'
          : described(item);
    }
    return out;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint' || typeof value === 'symbol' || typeof value === 'function') return typeof value;
  return value === undefined ? '·undefined' : value;
}

const CASES = 1000;

/** A case's record, hashed (the golden file holds one short hash per case, not the records). */
function digest(record: unknown): string {
  return createHash('sha256').update(JSON.stringify(record)).digest('hex').slice(0, 16);
}

describe('the gate decides as before the issue-25 common-path pass', () => {
  it('on seeded random registries, layers, rules and calls: the same Decisions, results, reads and tool inputs', async () => {
    const records: unknown[] = [];
    for (let seed = 1; seed <= CASES; seed++) records.push(await scenario(seed)());
    if (process.env['TOOLGATE_WRITE_GOLDEN'] === '1') writeFileSync(GOLDEN, `${JSON.stringify(records.map(digest))}\n`);
    const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')) as string[];
    expect(golden).toHaveLength(CASES);
    // A mismatch names the seed and shows what the gate does now (the code before can be run on the seed alone).
    for (let i = 0; i < CASES; i++)
      if (digest(records[i]) !== golden[i])
        expect({ seed: i + 1, now: records[i] }).toEqual({ seed: i + 1, now: 'the record of f7c3f2c' });
  });
});
