/**
 * Attack (src/gate/snapshot-text.ts's memo × src/schema-check.ts's per-check state; held): the memo hands every call
 * of one (tenant, caller) that brings the same short argument text one frozen object, and an `$async` check keeps
 * `uniqueItems`' structural ids, `enum`'s and `const`'s kept look-ups and the value's measures by that object (its
 * root value) while it awaits. Two calls with the same text to tools whose `$async` schemas differ therefore check
 * one object at once: the second check's start replaces the first's state under that object (the first then reads
 * the second's), and the first to end drops it under the other (which makes a new one). Everything kept there is a
 * function of the frozen value alone (ids by structure; look-ups by the table they were found in), so sharing it can
 * cost a walk again but never change a verdict or its words.
 *
 * Seeded: texts of small trees (leaves and members of the tables, so duplicates and members are common) sent at once,
 * each call started in the same tick, to six tools — `uniqueItems` at every level of a tree, two `enum`s whose tables
 * intern the same ids for different members, a `const`, and all three together — each keyword behind an `$async`
 * reference (an await before each), and all three in a synchronous schema (checked whole between the others'
 * awaits). Each call's status, reason and content equal the same call decided alone, which equals the schema
 * without `$async`; every call of one text ran with the one object the memo gave.
 *
 * Fails when what is kept by the root value depends on the schema: planted, `enum`'s kept look-ups not keyed by their
 * table (src/schema-enum.ts `keptFor`), the seeded run fails after 10 rounds (`{"l":[{},[0,0]]}` to enumA, uniq and
 * enumB at once) and `enumB` runs arguments it refuses beside `enumA` (the second test).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';

type Tree = null | boolean | number | string | Tree[] | { [key: string]: Tree };

/** `tree` under `$defs.t`, the arguments' `l` a reference to it; each `$defs` entry `$async`. */
function toolSchema(defs: Record<string, object>): JsonSchema {
  return {
    $async: true,
    type: 'object',
    required: ['l'],
    properties: { l: { $ref: '#/$defs/t' } },
    $defs: Object.fromEntries(Object.entries(defs).map(([name, def]) => [name, { ...def, $async: true }])),
  };
}

/** Arrays and objects below `t` are `t` again: the keyword applies at every level, after an await each. */
const below = { items: { $ref: '#/$defs/t' }, additionalProperties: { $ref: '#/$defs/t' } };

// Tables that intern the same ids (0: the scalar, 1: the first pair…) for different members.
const MEMBERS_A = [[0, 0], [1, 1], { a: [0] }, [0, [1]], 'a', 0];
const MEMBERS_B = [[1, 1], { a: [1] }, [[0], 1], [0, 0, 0], 'b', 1];

const SCHEMAS: Record<string, JsonSchema> = {
  uniq: toolSchema({ t: { ...below, uniqueItems: true } }),
  enumA: toolSchema({ t: { anyOf: [{ enum: MEMBERS_A }, { type: ['array', 'object'], ...below }] } }),
  enumB: toolSchema({ t: { anyOf: [{ enum: MEMBERS_B }, { type: 'array', ...below }] } }),
  constA: toolSchema({ t: { anyOf: [{ const: [0, [1]] }, { const: { a: [0] } }, { type: 'array', ...below }] } }),
  all: toolSchema({
    t: { allOf: [{ $ref: '#/$defs/u' }, { $ref: '#/$defs/e' }] },
    u: { ...below, uniqueItems: true },
    e: { anyOf: [{ enum: MEMBERS_B }, { const: [0, [1]] }, { type: ['array', 'object', 'number'], ...below }] },
  }),
};
// And the last as a synchronous schema: its check of the object runs whole between the others' awaits.
SCHEMAS['allSync'] = withoutAsync(SCHEMAS['all']) as JsonSchema;
const NAMES = Object.keys(SCHEMAS);

/** The schema without `$async` anywhere: what every call must decide as. */
function withoutAsync(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutAsync);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== '$async')
      .map(([key, item]) => [key, withoutAsync(item)]),
  );
}

const leaf = fc.oneof(
  fc.constantFrom<Tree>(0, 1, 'a', 'b', null, true),
  fc.constantFrom<Tree>(...MEMBERS_A, ...MEMBERS_B),
);
const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('tree'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('a', 'b'), tie('tree'), { maxKeys: 2 }),
  ),
})).tree;

/** An argument text the memo keeps (at most 256 characters). */
const text = tree.map((l) => JSON.stringify({ l })).filter((t) => t.length <= 256);

interface Outcome {
  readonly status: string;
  readonly reason: string;
  readonly content: unknown;
}

function registry(ran: { name: string; text: string; args: unknown }[]): ToolRegistry {
  const registry = new ToolRegistry();
  for (const name of NAMES)
    registry.register(
      defineTool({
        name,
        parameters: SCHEMAS[name]!,
        execute: async (args) => {
          await new Promise((resolve) => setImmediate(resolve));
          ran.push({ name, text: JSON.stringify(args), args });
          return 'ok';
        },
      }),
    );
  return registry;
}

async function decide(r: ToolRegistry, name: string, args: string, id: string): Promise<Outcome> {
  const [result] = await r.dispatch([{ id, name, arguments: args }]);
  return { status: result!.status, reason: result!.decision.reason, content: result!.content };
}

describe('concurrent $async checks of one memoised argument object', () => {
  const sync = Object.fromEntries(
    NAMES.map((name) => [name, compileValidator(withoutAsync(SCHEMAS[name]) as JsonSchema)]),
  );

  it('seeded: each call decided with others of the same text at once decides as alone, and as without $async', async () => {
    let interleaved = 0;
    let shared = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(text, { minLength: 1, maxLength: 3 }),
        fc.array(fc.tuple(fc.nat(NAMES.length - 1), fc.nat(2)), { minLength: 2, maxLength: 12 }),
        async (texts, picks) => {
          const calls = picks.map(([tool, t]) => ({ name: NAMES[tool]!, text: texts[t % texts.length]! }));
          const ran: { name: string; text: string; args: unknown }[] = [];
          const r = registry(ran);
          // Alone: one call at a time.
          const alone: Outcome[] = [];
          for (const [i, call] of calls.entries()) alone.push(await decide(r, call.name, call.text, `a${i}`));
          for (const [i, call] of calls.entries()) {
            const reference = sync[call.name]!(JSON.parse(call.text) as Record<string, unknown>) as ValidationResult;
            expect(alone[i]!.status).toBe(reference.ok ? 'ok' : 'refused');
          }
          const aloneRan = ran.length;
          // At once: every call started in the same tick, each check starting while the others await.
          const together = await Promise.all(calls.map((call, i) => decide(r, call.name, call.text, `a${i}`)));
          expect(together).toEqual(alone);
          expect(ran.length).toBe(2 * aloneRan);
          // Every run got the memo's one object for its text, frozen, and what the text says.
          const objectOf = new Map<string, unknown>();
          for (const { text: seen, args } of ran) {
            expect(Object.isFrozen(args)).toBe(true);
            const first = objectOf.get(seen);
            if (first === undefined) objectOf.set(seen, args);
            else {
              expect(args).toBe(first);
              shared++;
            }
          }
          if (new Set(calls.map((call) => call.text)).size < calls.length) interleaved++;
        },
      ),
      { seed: 20261207, numRuns: 80 },
    );
    // The runs did check one object in several calls at once.
    expect(interleaved).toBeGreaterThan(40);
    expect(shared).toBeGreaterThan(100);
  });

  it('two tools whose enum tables intern the same ids: a member of one only, sent to both at once', async () => {
    const ran: { name: string; text: string; args: unknown }[] = [];
    const r = registry(ran);
    // [0,0] is a member of A only (id 1 in A's table; id 1 in B's is [1,1]), [1,1] of both, 0 of A only: A passes
    // and B refuses, for [0,0] alone; each check looks [0,0] up after an await (the item before it).
    const args = '{"l":[[1,1],[0,0]]}';
    const alone = [await decide(r, 'enumA', args, 'x'), await decide(r, 'enumB', args, 'y')];
    expect(alone.map((o) => o.status)).toEqual(['ok', 'refused']);
    const rounds = await Promise.all(
      Array.from({ length: 8 }, (_, i) => decide(r, i % 2 === 0 ? 'enumA' : 'enumB', args, `c${i}`)),
    );
    expect(rounds).toEqual(Array.from({ length: 8 }, (_, i) => alone[i % 2]));
    expect(ran.filter((run) => run.name === 'enumB')).toEqual([]);
  });
});
