/**
 * Attack (src/gate/snapshot-text.ts's memo; held): every call of one (tenant, caller) that brings the same short
 * argument text gets one object, and the tool of one call holds it while the next is checked and run. A tool that
 * writes to its arguments (an own key set, an item of a list, a key added or deleted, its prototype replaced) would
 * change what a later call of that text is checked against (a valid call refused) or, between that call's `$async`
 * check and its tool's run, what it runs with (a refused amount run). The object is frozen, deeply, before any check
 * (snapshot.ts `freezeParsedArguments`): each write is refused, and the other call is checked against and runs with
 * what its text says.
 *
 * Fails when the memo's object is not frozen (planted in the report: `freezeParsed` without its `Object.freeze`).
 */
import { describe, expect, it } from 'vitest';
import { defineTool, PermissionPolicy, ToolRegistry } from '../../src/index.js';

const TEXT = '{"amount":5,"to":"alice","list":[1,2]}';

/** `pay` refuses an amount or an item past 100, a payee but alice and bob, another key; each behind an `$async` reference. */
const PAY = {
  $async: true,
  type: 'object',
  required: ['amount', 'to'],
  additionalProperties: false,
  properties: {
    amount: { $ref: '#/$defs/small' },
    to: { $ref: '#/$defs/to' },
    list: { type: 'array', items: { $ref: '#/$defs/small' } },
  },
  $defs: { small: { $async: true, type: 'integer', maximum: 100 }, to: { $async: true, enum: ['alice', 'bob'] } },
};

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Every write a tool might try on its arguments, and whether each took: none may. */
function writes(args: Record<string, unknown>): Record<string, boolean> {
  const list = args['list'] as unknown[];
  let pushed: boolean;
  try {
    list.push(1e9);
    pushed = true;
  } catch {
    pushed = false;
  }
  return {
    amount: Reflect.set(args, 'amount', 1e9),
    to: Reflect.set(args, 'to', 'mallory'),
    item: Reflect.set(list, 0, 1e9),
    length: Reflect.set(list, 'length', 0),
    pushed,
    added: Reflect.defineProperty(args, 'admin', { value: true, enumerable: true }),
    deleted: Reflect.deleteProperty(args, 'to'),
    prototype: Reflect.setPrototypeOf(args, { admin: true }),
  };
}

/** A caller of its own for each test: the memo's partition (a planted write in one test would not reach the next). */
let callers = 0;

function gate(handler = false): {
  call: (id: string, name: string) => ReturnType<ToolRegistry['dispatch']>;
  paid: string[];
  tried: Record<string, boolean>[];
  held: unknown[];
} {
  const paid: string[] = [];
  const tried: Record<string, boolean>[] = [];
  const held: unknown[] = [];
  const registry = new ToolRegistry();
  registry.register(
    defineTool({
      name: 'grab',
      parameters: { $async: true, type: 'object' },
      execute: async (args) => {
        held.push(args);
        await tick();
        tried.push(writes(args));
        return 'grabbed';
      },
    }),
  );
  registry.register(
    defineTool({
      name: 'pay',
      parameters: PAY,
      execute: async (args) => {
        held.push(args);
        await tick();
        await tick();
        paid.push(JSON.stringify(args));
        return 'paid';
      },
    }),
  );
  if (handler) {
    // `grab` is asked about; its handler writes to the arguments it is shown (the same object) and allows.
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [
          { name: 'ask', tools: ['grab'], result: 'ask' },
          { name: 'pay', tools: ['pay'], result: 'allow' },
        ],
      }),
    );
    registry.setPermissionHandler(async (request) => {
      held.push(request.parameters);
      await tick();
      tried.push(writes(request.parameters as Record<string, unknown>));
      return 'allow' as const;
    });
  }
  const caller = { id: `caller-${callers++}` };
  const call = (id: string, name: string) => registry.dispatch([{ id, name, arguments: TEXT }], { caller });
  return { call, paid, tried, held };
}

const NONE_TOOK = {
  amount: false,
  to: false,
  item: false,
  length: false,
  pushed: false,
  added: false,
  deleted: false,
  prototype: false,
};

describe('a tool writing to the memo’s object changes no other call of the same text', () => {
  it('written after its run, before the next call of the text is checked: that call passes and runs with the text', async () => {
    const { call, paid, tried, held } = gate();
    expect((await call('g', 'grab'))[0]!.status).toBe('ok');
    const [pay] = await call('p', 'pay');
    expect([pay!.status, pay!.decision.reason]).toEqual(['ok', 'no permission policy is set']);
    expect(paid).toEqual([TEXT]);
    expect(tried).toEqual([NONE_TOOK]);
    expect(held[1]).toBe(held[0]); // the memo's one object
  });

  it('written while the other call’s $async check ran, before its tool reads it: it runs with the text', async () => {
    const { call, paid, tried, held } = gate();
    const results = await Promise.all([call('g', 'grab'), call('p', 'pay'), call('q', 'pay')]);
    expect(results.map(([result]) => result!.status)).toEqual(['ok', 'ok', 'ok']);
    expect(paid).toEqual([TEXT, TEXT]);
    expect(tried).toEqual([NONE_TOOK]);
    expect(new Set(held).size).toBe(1);
  });

  it('many rounds of writers and payers at once, in turn: nothing written, every payment the text', async () => {
    const { call, paid, tried } = gate();
    for (let round = 0; round < 5; round++)
      await Promise.all(
        Array.from({ length: 6 }, (_, i) => call(`${round}.${i}`, i % 2 === round % 2 ? 'grab' : 'pay')),
      );
    expect(paid).toEqual(Array.from({ length: 15 }, () => TEXT));
    expect(tried).toEqual(Array.from({ length: 15 }, () => NONE_TOOK));
  });

  it('written by a permission handler shown the arguments, while the other call is checked: it runs with the text', async () => {
    const { call, paid, tried, held } = gate(true);
    const results = await Promise.all([call('g', 'grab'), call('p', 'pay'), call('q', 'pay')]);
    expect(results.map(([result]) => result!.status)).toEqual(['ok', 'ok', 'ok']);
    expect(paid).toEqual([TEXT, TEXT]);
    expect(tried).toEqual([NONE_TOOK, NONE_TOOK]);
    expect(new Set(held).size).toBe(1);
  });
});
