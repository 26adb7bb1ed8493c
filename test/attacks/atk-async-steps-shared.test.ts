/**
 * Attack (availability, MEDIUM, src/schema-bounds.ts's count of steps): every check counted its steps into one
 * process-wide count, and each check's start set it to zero. An `$async` check awaits at each `$ref` to an `$async`
 * schema, and other checks run meanwhile: (1) each of their starts set the count of the `$async` check under them to
 * zero, so it was never stopped at its bound (one did ~16.4 × 10^9 steps, 65 times the bound, and passed after 11.4 s
 * while 102 other checks started); (2) a check stopped at the bound left the count above it, so another tool's valid
 * `$async` check that resumed then was refused, naming the bound it never reached. Now each `$async` check counts into
 * a count of its own, from its start across its awaits, and nothing another check does changes it.
 *
 * Counted, not timed: the refusal (a check's own count reached its bound), and each check's own count.
 */
import { describe, expect, it } from 'vitest';
import { compileValidator, type ValidationResult } from '../../src/schema.js';
import { boundErrors, stepsCounted, STOPPED_STEPS_ISSUE } from '../../src/schema-bounds.js';
import { refChain, registryWith, syncResult } from './fixtures/schema-tool.js';

/** `schema` with `$async: true` at its root and at each of its `$defs` (each `$ref` between them an await). */
function allAsync(schema: Record<string, unknown>): Record<string, unknown> {
  const defs = schema['$defs'] as Record<string, object>;
  return {
    ...schema,
    $async: true,
    $defs: Object.fromEntries(Object.entries(defs).map(([name, def]) => [name, { ...def, $async: true }])),
  };
}

/** Starts a small synchronous check at each turn of the microtask queue until `until` settles; how many started. */
async function checksMeanwhile(until: Promise<unknown>): Promise<number> {
  const small = compileValidator({ type: 'object', properties: { n: { type: 'integer' } } });
  let settled = false;
  void until.finally(() => (settled = true));
  let started = 0;
  while (!settled) {
    await null;
    expect(syncResult(small({ n: started++ })).ok).toBe(true);
  }
  return started;
}

const STRINGS = Array.from({ length: 10_000 }, () => 'a');

describe('an $async check is stopped at its own bound while other checks start during its awaits', () => {
  // 2^13 places of a leaf looping over 10,000 strings: ~490M steps, about twice the bound; each leaf an await.
  const schema = allAsync(refChain({ items: { type: 'string' } }, 13));

  it('alone: refused naming the bound', async () => {
    expect(await compileValidator(schema)({ x: STRINGS })).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
  });

  it('beside a check started at every turn of the microtask queue: refused naming the bound (main: passed)', async () => {
    const check = compileValidator(schema)({ x: STRINGS }) as Promise<ValidationResult>;
    const started = await checksMeanwhile(check);
    expect(await check).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
    expect(started).toBeGreaterThan(100);
  });

  it('through a registry, beside calls to another tool decided one after another: refused, and the tool does not run (main: ran)', async () => {
    const { registry, ran } = registryWith(schema);
    const other = registryWith({ $async: true, type: 'object', properties: { n: { type: 'integer' } } });
    const big = registry.invoke('pay', { x: STRINGS });
    let settled = false;
    void big.finally(() => (settled = true));
    while (!settled) expect((await other.registry.invoke('pay', { n: other.ran.length })).status).toBe('ok');
    const result = await big;
    expect(result.status).toBe('refused');
    expect(result.decision.reason).toContain(STOPPED_STEPS_ISSUE);
    expect(ran).toEqual([]);
    expect(other.ran.length).toBeGreaterThan(100);
  });
});

/** Two `$async` references (two awaits), then a loop: steps counted after it resumes. */
const SMALL = {
  $async: true,
  type: 'object',
  properties: {
    a: { $ref: '#/$defs/n' },
    b: { $ref: '#/$defs/n' },
    list: { type: 'array', items: { type: 'string' } },
  },
  $defs: { n: { $async: true, type: 'integer' } },
};

describe('a check stopped at the bound leaves no count to another check', () => {
  it('a valid $async check resuming after a synchronous check stopped at the bound: passes (main: refused)', async () => {
    const small = compileValidator(SMALL)({ a: 1, b: 2, list: ['x', 'y'] });
    expect(small).toBeInstanceOf(Promise);
    const big = syncResult(compileValidator(refChain({ items: { type: 'string' } }))({ x: STRINGS }));
    expect(big).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
    expect(await small).toMatchObject({ ok: true });
  });

  it('another tool’s valid $async call, decided while a call stopped at the bound: runs (main: refused)', async () => {
    const { registry, ran } = registryWith(SMALL);
    const stopping = registryWith(refChain({ items: { type: 'string' } }));
    const valid = registry.invoke('pay', { a: 1, b: 2, list: ['x'] });
    const refused = await stopping.registry.invoke('pay', { x: STRINGS });
    expect(refused.status).toBe('refused');
    expect(refused.decision.reason).toContain(STOPPED_STEPS_ISSUE);
    expect((await valid).status).toBe('ok');
    expect(ran).toEqual([{ a: 1, b: 2, list: ['x'] }]);
  });

  it('a valid $async check resuming after an $async check stopped at the bound: passes', async () => {
    const big = compileValidator(allAsync(refChain({ items: { type: 'string' } }, 13)));
    const small = compileValidator(SMALL);
    const stopped = big({ x: STRINGS }) as Promise<ValidationResult>;
    // Each small check starts after the big one has run a while, and resumes between its awaits or after it stopped.
    const results: Promise<ValidationResult>[] = [];
    let settled = false;
    void stopped.finally(() => (settled = true));
    while (!settled) {
      await null;
      results.push(small({ a: 1, b: 2, list: ['x'] }) as Promise<ValidationResult>);
    }
    results.push(small({ a: 1, b: 2, list: ['x'] }) as Promise<ValidationResult>);
    expect(await stopped).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
    expect(results.length).toBeGreaterThan(100);
    for (const result of await Promise.all(results)) expect(result).toEqual({ ok: true, value: expect.anything() });
  });
});

/**
 * A schema of two `$async` lists and a number `z` after them, read last: its value's getter records the count of the
 * check reading it (src/schema-bounds.ts `stepsCounted`, the check running now), by then all of the check's steps.
 */
const LISTS = {
  $async: true,
  type: 'object',
  properties: { a: { $ref: '#/$defs/list' }, b: { $ref: '#/$defs/list' }, z: { type: 'number' } },
  $defs: { list: { $async: true, type: 'array', items: { type: 'string' } } },
};

function listsOf(length: number, seen: number[], item: unknown = 'a'): Record<string, unknown> {
  const list = Array.from({ length }, () => item);
  return {
    a: list,
    b: list,
    get z() {
      seen.push(stepsCounted());
      return 1;
    },
  };
}

describe('interleaved $async checks each count exactly their own steps', () => {
  it('two checks of different sizes, and synchronous checks between their awaits: each its count alone (main: not)', async () => {
    const check = compileValidator(LISTS);
    const alone = async (length: number): Promise<number> => {
      const seen: number[] = [];
      expect(await check(listsOf(length, seen))).toMatchObject({ ok: true });
      return seen.at(-1)!;
    };
    const small = await alone(10);
    const large = await alone(1_000);
    expect(large).toBeGreaterThan(small);
    const seenSmall: number[] = [];
    const seenLarge: number[] = [];
    const both = Promise.all([check(listsOf(1_000, seenLarge)), check(listsOf(10, seenSmall))]);
    expect(await checksMeanwhile(both)).toBeGreaterThan(2);
    for (const result of await both) expect(result).toMatchObject({ ok: true });
    expect([seenSmall.at(-1), seenLarge.at(-1)]).toEqual([small, large]);
  });

  it('many checks started in turn, each awaiting while the others run: each counts what it counts alone', async () => {
    const check = compileValidator(LISTS);
    const lengths = Array.from({ length: 20 }, (_, i) => 1 + i * 37);
    const alone: number[] = [];
    for (const length of lengths) {
      const seen: number[] = [];
      await check(listsOf(length, seen));
      alone.push(seen.at(-1)!);
    }
    const seen = lengths.map((): number[] => []);
    await Promise.all(lengths.map((length, i) => check(listsOf(length, seen[i]!))));
    expect(seen.map((each) => each.at(-1))).toEqual(alone);
  });
});

describe('an $async check whose awaited check fails: its count is the running one again in the catch', () => {
  it('failing lists (each rejects its await), interleaved: each counts what it counts alone', async () => {
    const check = compileValidator({ ...LISTS, properties: { a: { $ref: '#/$defs/list' }, z: { type: 'number' } } });
    const lengths = [3, 50, 400];
    const alone: number[] = [];
    for (const length of lengths) {
      const seen: number[] = [];
      expect(await check(listsOf(length, seen, 1))).toMatchObject({ ok: false });
      alone.push(seen.at(-1)!);
    }
    const seen = lengths.map((): number[] => []);
    const all = Promise.all(lengths.map((length, i) => check(listsOf(length, seen[i]!, 1))));
    expect(await checksMeanwhile(all)).toBeGreaterThan(2);
    expect(seen.map((each) => each.at(-1))).toEqual(alone);
  });
});

describe('after each await Ajv writes, the check’s count is the running one again, or the schema does not compile', () => {
  const start = 'async function validate0(data){let vErrors = null;let errors = 0;';
  const restore = 'self.$toolgateWork.cur=$toolgateCount;';
  // Each await weighed after its restore (atk-async-await-weight): resolved 200 steps, rejected 10,000.
  const stop = `{throw new RangeError(${JSON.stringify(STOPPED_STEPS_ISSUE)},{cause:vErrors});}`;
  const resolved = `${restore}if(($toolgateCount.steps+=200)>250000000)${stop}`;
  const rejected = `${restore}if(($toolgateCount.steps+=10000)>250000000)${stop}`;

  it('a reference to an $async schema: after its statement and first in its catch', () => {
    const code = boundErrors(
      `${start}try{await validate1(data.a, {instancePath:instancePath+"/a;}",rootData});}catch(e0){if(!(e0 instanceof Error0)){throw e0;}}if(errors === 0){return data;}else {throw new Error0(vErrors);}}`,
    );
    expect(code).toContain(`rootData});${resolved}}catch(e0){${rejected}if(!(e0 instanceof Error0))`);
    const keyword = boundErrors(
      `${start}try{valid0 = await func0.call(self, data);valid1 = 1;}catch(e1){valid0 = false;}}`,
    );
    expect(keyword).toContain(
      `valid0 = await func0.call(self, data);${resolved}valid1 = 1;}catch(e1){${rejected}valid0`,
    );
  });

  it('an await elsewhere (in a condition, outside a try, a try without its catch) throws', () => {
    expect(() => boundErrors(`${start}if(!(await format0(data))){errors++;}return data;}`)).toThrow(/cannot bound/);
    expect(() => boundErrors(`${start}await validate1(data);return data;}`)).toThrow(/cannot bound/);
    expect(() => boundErrors(`${start}try{await validate1(data);}finally{}return data;}`)).toThrow(/cannot bound/);
    expect(() => boundErrors(`${start}try{x(); await validate1(data);}catch(e0){}return data;}`)).toThrow(
      /cannot bound/,
    );
    // A property named await, and the word in a string, are not awaits.
    expect(() => boundErrors(`${start}if(data.await !== "await"){errors++;}return data;}`)).not.toThrow();
  });
});
