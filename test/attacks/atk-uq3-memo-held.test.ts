/**
 * Attack (memory, src/schema-bounds.ts `uniqueItems`'s memo, 416b1c9): the structural ids one check keeps (`memo`:
 * every text it interned — a copy of each string's and number's JSON among the items, and a text per array and
 * object) are dropped only when the next check starts (`newCheck()`), never when the check ends. A gateway that
 * checks one large value and then sits idle, or serves only Standard Schema tools after it, keeps the memo of that
 * value: many times its JSON. Outside the tests (`node --expose-gc --import tsx tmp/mem.mts objects 1000000`,
 * scratch): 13 MB of `{"k":i}` objects under `uniqueItems` held 148 MB of heap once the value was dropped, 50 MB of
 * distinct strings 148 MB, 7 MB of numbers 53 MB; still so after 2 s idle; released by the next check of any JSON
 * Schema. The check before (d57ee8d) dropped its ids with its call. Here 2.6 MB of arguments through the gate, and
 * the same as an upstream's answer under its output schema, each leave ~34 MB held once the call is over (each
 * measured after a first such check and a small one, so what the first check leaves for good is not counted).
 * Fails on main (416b1c9); passes with the memo dropped when its check ends (syncValidator's `finally`, and asyncValidator's once its
 * promise settles: the `$async` case fails with the first alone).
 */
import { describe, expect, it } from 'vitest';
import { heapAfterGc } from '../heap.js';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { registryWith } from './fixtures/schema-tool.js';

const SCHEMA = { type: 'object', properties: { l: { type: 'array', uniqueItems: true } } } as const;
const COUNT = 200_000;

/** `{"l":[{"k":0},{"k":1},…]}`: COUNT distinct objects (2.6 MB). */
function text(): string {
  return `{"l":[${Array.from({ length: COUNT }, (_, i) => `{"k":${i}}`).join(',')}]}`;
}

const MB = 1024 * 1024;

describe("uniqueItems' memo does not outlive its check", () => {
  it('the gate: a call with 2.6 MB of arguments keeps nothing of them once it is answered (main: ~34 MB)', async () => {
    const { registry, ran } = registryWith(SCHEMA);
    const call = async (args: string): Promise<void> => {
      const [result] = await registry.executeToolCalls([{ id: 'c', name: 'pay', arguments: args }]);
      expect(result).toMatchObject({ isError: false });
      ran.length = 0; // the tool keeps nothing
    };
    await call(text());
    await call('{"l":[1,2]}');
    const before = heapAfterGc();
    await call(text());
    expect(heapAfterGc() - before).toBeLessThan(8 * MB);
  });

  it('an `$async` schema: the same once its check has settled (main: ~34 MB)', async () => {
    const { registry, ran } = registryWith({ $async: true, ...SCHEMA });
    const call = async (args: string): Promise<void> => {
      const [result] = await registry.executeToolCalls([{ id: 'c', name: 'pay', arguments: args }]);
      expect(result).toMatchObject({ isError: false });
      ran.length = 0;
    };
    await call(text());
    await call('{"l":[1,2]}');
    const before = heapAfterGc();
    await call(text());
    expect(heapAfterGc() - before).toBeLessThan(8 * MB);
  });

  it("an upstream's answer under its output schema: nothing of it held after the check (main: ~34 MB)", () => {
    const validate = outputSchemaValidator.getValidator(SCHEMA as never);
    const check = (value: unknown): void => expect(validate(value).valid).toBe(true);
    check(JSON.parse(text()));
    check({ l: [1, 2] });
    const before = heapAfterGc();
    check(JSON.parse(text()));
    expect(heapAfterGc() - before).toBeLessThan(8 * MB);
  });
});
