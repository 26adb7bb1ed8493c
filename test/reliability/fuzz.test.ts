/**
 * Fuzzing the call-shape parsers (readCall, parseArguments) and the batch entry point
 * (registry.executeToolCalls) with random and mutated inputs: no crash, no hang, always a clear result.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, PermissionPolicy, ToolRegistry, type ToolCallInput } from '../../src/index.js';
import { parseArguments, readCall } from '../../src/formats/index.js';
import { FuzzFailure, fuzzText } from './fuzz-harness.js';
import { fcParams, SEED, size } from './size.js';

const FORMATS = new Set(['openai-chat', 'openai-responses', 'anthropic', 'gemini', 'toolgate']);

const SEEDS = [
  JSON.stringify([{ id: 'a', type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } }]),
  JSON.stringify([{ type: 'function_call', call_id: 'b', name: 'search', arguments: '{"q":"x"}' }]),
  JSON.stringify([{ type: 'tool_use', id: 'c', name: 'search', input: { q: 'x' } }]),
  JSON.stringify([{ functionCall: { id: 'd', name: 'search', args: { q: 'x' } } }]),
  JSON.stringify([
    { id: 'e', name: 'refund', arguments: { amount: 5 } },
    { name: 'SEARCH', arguments: '{"q":"y"}' },
  ]),
];

function checkRead(raw: unknown): void {
  const call = readCall(raw);
  // The id is the provider's when it gave a string (even an empty one: results must echo it), else generated.
  expect(typeof call.id).toBe('string');
  expect(typeof call.name).toBe('string');
  expect(FORMATS.has(call.format)).toBe(true);
  if ('problem' in call) expect(call.problem.length).toBeGreaterThan(0);
}

/** Values with the keys and shapes a call may have, nested at random, plus anything at all. */
const callLike = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.anything({
      withObjectString: true,
      withNullPrototype: true,
      withBoxedValues: true,
      withMap: true,
      withSet: true,
      withSparseArray: true,
    }),
    fc.record(
      {
        type: fc.constantFrom('function', 'function_call', 'tool_use', 'text', undefined, 7),
        id: fc.oneof(fc.string(), fc.constant(undefined), fc.integer()),
        call_id: fc.oneof(fc.string(), fc.constant(undefined)),
        name: fc.oneof(
          fc.constantFrom('search', '__proto__', 'toString', ''),
          fc.string(),
          fc.integer(),
          fc.constant(null),
        ),
        function: tie('value'),
        functionCall: tie('value'),
        arguments: fc.oneof(fc.json(), tie('value')),
        input: tie('value'),
        args: tie('value'),
      },
      { requiredKeys: [] },
    ),
  ),
})).value;

describe('readCall', () => {
  it('never throws and always returns a call or a clear problem, for any value', () => {
    fc.assert(fc.property(callLike, checkRead), fcParams(1_500, 100_000));
  });

  it('reads a JSON "__proto__" key as data: it does not make a call', () => {
    for (const raw of [
      JSON.parse('{"__proto__": {"name": "search"}}') as unknown,
      JSON.parse('{"type": "tool_use", "__proto__": {"name": "search"}}') as unknown,
      Object.create(null) as unknown,
    ]) {
      const call = readCall(raw);
      expect('problem' in call, JSON.stringify(raw)).toBe(true);
    }
  });

  it('never throws on mutated JSON call shapes', async () => {
    const stats = await fuzzText({
      seed: SEED,
      runs: size(3_000, 100_000),
      seeds: SEEDS,
      target: (text) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch (error) {
          throw new ConfigurationError(`not JSON: ${(error as Error).message}`);
        }
        for (const raw of Array.isArray(parsed) ? parsed : [parsed]) checkRead(raw);
        return parsed;
      },
    });
    expect(stats.accepted).toBeGreaterThan(0);
    expect(stats.refused).toBeGreaterThan(0);
  });
});

describe('parseArguments', () => {
  it('never throws; refuses anything that is not a JSON object, with a reason', async () => {
    const stats = await fuzzText({
      seed: SEED,
      runs: size(5_000, 200_000),
      seeds: ['{"q":"x"}', '{"amount": 5, "tags": ["a"], "nested": {"k": null}}', '{}', '  '],
      target: (text) => {
        const parsed = parseArguments(text);
        if (!parsed.ok) {
          expect(parsed.problem.length).toBeGreaterThan(0);
          throw new ConfigurationError(parsed.problem);
        }
        expect(typeof parsed.value).toBe('object');
        expect(Array.isArray(parsed.value)).toBe(false);
        return parsed.value;
      },
    });
    expect(stats.accepted).toBeGreaterThan(0);
    expect(stats.refused).toBeGreaterThan(0);
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const parsed = parseArguments(value);
        if (parsed.ok && typeof value !== 'string') expect(parsed.value).toBe(value);
        else if (parsed.ok) {
          expect(String(value).trim()).not.toBe('');
          expect(parsed.value).toEqual(JSON.parse(String(value)));
        } else expect(parsed.problem.length).toBeGreaterThan(0);
      }),
      fcParams(2_000, 50_000),
    );
  });
});

describe('registry.executeToolCalls', () => {
  function fixture(): { registry: ToolRegistry; ran: string[] } {
    const ran: string[] = [];
    const registry = new ToolRegistry({ handlerTimeoutMs: 5 });
    for (const name of ['search', 'refund', '__proto__']) {
      registry.register({
        name,
        parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
        execute: (_args, { callId }) => {
          ran.push(callId);
          return 'ran';
        },
      });
    }
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [
          { name: 'search_only', tools: ['search'], result: 'allow' },
          { name: 'ask_refund', tools: ['refund'], result: 'ask' },
        ],
      }),
    );
    registry.setPermissionHandler(() => {
      throw new Error('no approver');
    });
    return { registry, ran };
  }

  async function checkBatch(registry: ToolRegistry, ran: string[], calls: unknown[]): Promise<void> {
    const decided: { callId: string; effect: string }[] = [];
    const off = registry.onChange((event) => {
      if (event.type === 'tool_decided') decided.push({ callId: event.decision.callId, effect: event.decision.effect });
    });
    ran.length = 0;
    try {
      const results = await registry.executeToolCalls(calls as ToolCallInput[]);
      expect(results).toHaveLength(calls.length);
      expect(decided).toHaveLength(calls.length);
      for (const [i, result] of results.entries()) {
        expect(typeof result).toBe('object');
        const call = readCall(calls[i]);
        if (call.format === 'toolgate') expect('decision' in result).toBe(true);
        if ('decision' in result && result.decision.effect === 'deny') expect(result.isError).toBe(true);
      }
      // Only allowed calls ran, and only to 'search' (the one tool the policy allows).
      const allowed = new Set(decided.filter((d) => d.effect === 'allow').map((d) => d.callId));
      for (const id of ran) expect(allowed.has(id)).toBe(true);
      expect(ran.length).toBe([...decided].filter((d) => d.effect === 'allow').length);
    } finally {
      off();
    }
  }

  it('answers any array of values with one clear result per call, and runs only what is allowed', async () => {
    const { registry, ran } = fixture();
    await fc.assert(
      fc.asyncProperty(fc.array(callLike, { maxLength: 6 }), (calls) => checkBatch(registry, ran, calls)),
      fcParams(300, 20_000),
    );
  });

  it('answers mutated batches the same way', async () => {
    const { registry, ran } = fixture();
    const stats = await fuzzText({
      seed: SEED,
      runs: size(2_000, 50_000),
      seeds: SEEDS,
      target: async (text) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch (error) {
          throw new ConfigurationError(`not JSON: ${(error as Error).message}`);
        }
        await checkBatch(registry, ran, Array.isArray(parsed) ? parsed : [parsed]);
      },
    });
    expect(stats.accepted).toBeGreaterThan(0);
  });

  it('rejects a batch that is not an array with a TypeError (a programming error), never runs anything', async () => {
    const { registry, ran } = fixture();
    for (const notArray of [
      null,
      undefined,
      'calls',
      42,
      { length: 1, 0: { name: 'search', arguments: { q: 'x' } } },
    ]) {
      await expect(registry.executeToolCalls(notArray as unknown as ToolCallInput[])).rejects.toThrow(TypeError);
    }
    expect(ran).toEqual([]);
  });
});

describe('the fuzz harness itself', () => {
  it('catches a target that throws something other than a clear error', async () => {
    await expect(
      fuzzText({ seed: 1, runs: 200, seeds: ['{"a": 1}'], target: (text) => JSON.parse(text) as unknown }),
    ).rejects.toThrow(FuzzFailure);
  });

  it('catches a target that takes longer than its budget', async () => {
    await expect(
      fuzzText({
        seed: 1,
        runs: 50,
        seeds: ['x'],
        budgetMs: 20,
        target: () => {
          const until = performance.now() + 40;
          while (performance.now() < until) {
            // busy: a loader stuck on an input
          }
        },
      }),
    ).rejects.toThrow(/budget/);
  });
});
