/**
 * Attacks on the memo of JSON argument text (src/gate/snapshot-text.ts `snapshotText`) that held: one text met by
 * registries, tools and schemas that read it differently, by a tool, rule or listener that tries to change
 * the object it is handed, and by a refused call before an allowed one. Each call is decided and run on its
 * own text as the path without the memo (a text padded past the longest kept) decides and runs it.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { snapshotText, textMemo } from '../../src/gate/snapshot-text.js';
import { defineTool, PermissionPolicy, ToolRegistry } from '../../src/index.js';

const call = (id: string, name: string, args: string) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
});
/** The same JSON, read without the memo (past the longest text kept). */
const unkept = (text: string): string => `${text}${' '.repeat(300)}`;

describe('one argument text shared by the memo across tools, schemas and registries', () => {
  it('a strict schema refuses what a lax one (another registry) accepted first, hit or not', async () => {
    while (textMemo().resting) snapshotText('{}');
    const text = '{"path":"/tmp/a","mode":"rw"}';
    const lax = new ToolRegistry();
    lax.register(defineTool({ name: 'touch', parameters: { type: 'object' }, execute: () => 'lax ran' }));
    const strict = new ToolRegistry();
    const ran: unknown[] = [];
    strict.register(
      defineTool({
        name: 'touch',
        parameters: {
          type: 'object',
          properties: { path: { type: 'string' } },
          required: ['path'],
          additionalProperties: false,
        },
        execute: (args) => (ran.push(args), 'strict ran'),
      }),
    );
    expect((await lax.dispatch([call('a', 'touch', text)]))[0]!.status).toBe('ok');
    const [hit] = await strict.dispatch([call('b', 'touch', text)]);
    const [miss] = await strict.dispatch([call('c', 'touch', unkept(text))]);
    expect(hit!.status).toBe('refused');
    expect(miss!.status).toBe('refused');
    expect(ran).toEqual([]);
  });

  it("a zod transform's output is its own call's; the plain tool after it gets the text's object", async () => {
    while (textMemo().resting) snapshotText('{}');
    const text = '{"amount":5}';
    const seen: Record<string, unknown>[] = [];
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'pay_cents',
        parameters: z.object({ amount: z.number() }).transform((v) => ({ amount: v.amount * 100 })),
        execute: (args) => (seen.push(args), 'paid'),
      }),
    );
    registry.register(
      defineTool({
        name: 'pay',
        parameters: { type: 'object', properties: { amount: { type: 'number', maximum: 10 } } },
        execute: (args) => (seen.push(args), 'paid'),
      }),
    );
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [
          { name: 'cap', tools: ['pay_cents'], match: (_t, p) => Number(p['amount']) > 1000, result: 'deny' },
          { name: 'rest', tools: ['pay_cents', 'pay'], result: 'allow' },
        ],
      }),
    );
    for (let round = 0; round < 2; round++) {
      expect((await registry.dispatch([call(`t${round}`, 'pay_cents', text)]))[0]!.status).toBe('ok');
      expect((await registry.dispatch([call(`p${round}`, 'pay', text)]))[0]!.status).toBe('ok');
    }
    expect(seen).toEqual([{ amount: 500 }, { amount: 5 }, { amount: 500 }, { amount: 5 }]);
    // Transforms never feed the memo: the text's object is still what JSON.parse read.
    expect(snapshotText(text)).toEqual({ amount: 5 });
  });

  it('a tool, a rule and a listener that change their object change nothing the next call of the text sees', async () => {
    while (textMemo().resting) snapshotText('{}');
    const text = '{"cmd":"ls","opts":{"dir":"/home"},"list":[1,2]}';
    const ran: unknown[] = [];
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'shell',
        parameters: { type: 'object' },
        execute: (args) => {
          ran.push(JSON.stringify(args));
          const a = args as { cmd: string; opts: { dir: string }; list: number[] };
          expect(() => (a.cmd = 'rm -rf /')).toThrow(TypeError);
          expect(() => (a.opts.dir = '/')).toThrow(TypeError);
          expect(() => a.list.push(3)).toThrow(TypeError);
          return 'ok';
        },
      }),
    );
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [
          {
            name: 'home only',
            tools: ['shell'],
            match: (_t, p) => {
              try {
                (p as Record<string, unknown>)['cmd'] = 'rm -rf /';
              } catch {
                // frozen
              }
              return (p['opts'] as { dir?: unknown }).dir !== '/home';
            },
            result: 'deny',
          },
          { name: 'rest', tools: ['shell'], result: 'allow' },
        ],
      }),
    );
    let heard = 0;
    registry.onChange((event) => {
      const p = (event as { decision?: { parameters?: Record<string, unknown> | null } }).decision?.parameters;
      if (p) heard++;
      if (p)
        try {
          (p['opts'] as Record<string, unknown>)['dir'] = '/';
        } catch {
          // frozen
        }
    });
    for (let i = 0; i < 3; i++) expect((await registry.dispatch([call(`s${i}`, 'shell', text)]))[0]!.status).toBe('ok');
    expect(heard).toBeGreaterThanOrEqual(3);
    expect(ran).toEqual([JSON.parse(text), JSON.parse(text), JSON.parse(text)].map((v) => JSON.stringify(v)));
  });

  it('a text first met in a refused call (another tool) is decided afresh for the next tool, and the reverse', async () => {
    while (textMemo().resting) snapshotText('{}');
    const text = '{"target":"prod-db"}';
    const ran: string[] = [];
    const registry = new ToolRegistry();
    for (const name of ['drop', 'describe'])
      registry.register(defineTool({ name, parameters: { type: 'object' }, execute: () => (ran.push(name), name) }));
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [
          { name: 'no drop', tools: ['drop'], result: 'deny' },
          { name: 'describe', tools: ['describe'], result: 'allow' },
        ],
      }),
    );
    const order = ['drop', 'describe', 'drop', 'describe', 'drop'];
    const statuses = [];
    for (const [i, name] of order.entries())
      statuses.push((await registry.dispatch([call(`x${i}`, name, text)]))[0]!.status);
    expect(statuses).toEqual(['refused', 'ok', 'refused', 'ok', 'refused']);
    expect(ran).toEqual(['describe', 'describe']);
  });
});
