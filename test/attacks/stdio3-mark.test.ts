/**
 * Attack on merge cf5941a (stdio3, 2026-12-06; reverted for what this found): the gateway mark as a private field
 * stamped through a constructor that returned its argument, and a gateway result's `content` as one shared accessor
 * defined with `Object.defineProperty` from an ordinary descriptor object — which inherits a polluted
 * Object.prototype's `value` / `writable`: the define threw, an async tool's then-callback with it (an unhandled
 * rejection ended the process). A gateway result is an object literal again: its `content`, `value` and `decision`
 * are defined (CreateDataProperty / a literal accessor), never looked up on Object.prototype. These guard that.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayCall, type GateContext, type ToolResult } from '../../src/gate/index.js';
import { registryOf, run } from '../gate/fixtures/give-tool.js';

const proto = Object.prototype as Record<string, unknown>;
afterEach(() => {
  for (const key of ['value', 'writable', 'decision']) delete proto[key];
});

describe('stdio3: a polluted Object.prototype and a gateway result', () => {
  // What a tool that merges untrusted JSON into an object (`{"__proto__": {"value": 1}}` from a nested source
  // the gate does not see) leaves behind: a plain writable data key on Object.prototype. The gate's own
  // descriptor object `lazyContent` then inherits `value` (ToPropertyDescriptor uses HasProperty), so
  // Object.defineProperty(result, 'content', lazyContent) throws "Invalid property descriptor".
  for (const key of ['value', 'writable']) {
    for (const async of [false, true]) {
      it(`an ok call stays ok with Object.prototype.${key} set (${async ? 'a promise' : 'a plain value'})`, async () => {
        const eager = await run(
          registryOf(() => ({ n: 1 }), async),
          { agent: 'a' },
        );
        expect(eager.status).toBe('ok');
        proto[key] = 1;
        let outcome: ToolResult | Error;
        try {
          // A short timeout: the async form would otherwise wait for the tool's deadline (the callback threw).
          outcome = await Promise.race([
            run(
              registryOf(() => ({ n: 1 }), async),
              gatewayCall({ agent: 'a' }),
            ),
            new Promise<Error>((resolve) => setTimeout(() => resolve(new Error('not settled in 1 s')), 1000)),
          ]);
        } catch (error) {
          outcome = error as Error;
        }
        delete proto[key];
        expect(outcome instanceof Error ? `threw/hung: ${outcome.message}` : outcome.status).toBe('ok');
        if (!(outcome instanceof Error)) expect(outcome.content).toBe('{"n":1}');
      });
    }
  }

  it('a gateway process outlives the pollution: the call settles ok, nothing left unhandled', () => {
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'stdio3-crash-worker.ts')],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect({
      status: child.status,
      stdout: child.stdout,
      stderr: child.stderr.split('\n').slice(0, 6).join('\n'),
    }).toEqual({
      status: 0,
      stdout: 'settled ok\n',
      stderr: '',
    });
  });

  // An accessor on Object.prototype (code a tool or a listener runs) intercepts `result.value = value` and
  // `result.decision = decision` (assignments, not definitions): the result has no own `value` or `decision`,
  // and what the gateway answers and audits (calls.ts: result.value, result.decision) is the accessor's.
  it("a gateway result's value and decision are its own, whatever Object.prototype holds", async () => {
    const seen: unknown[] = [];
    const forged = { effect: 'allow', forged: true };
    Object.defineProperty(Object.prototype, 'decision', {
      configurable: true,
      get: () => forged,
      set: (d: unknown) => void seen.push(d),
    });
    let result: ToolResult;
    try {
      result = await run(
        registryOf(() => ({ n: 1 }), false),
        gatewayCall({ agent: 'a' }),
      );
    } finally {
      delete proto['decision'];
    }
    expect(seen).toEqual([]);
    expect(Object.hasOwn(result, 'decision')).toBe(true);
    expect(result.decision).not.toBe(forged);
  });
});

describe('stdio3: the mark on contexts of every kind', () => {
  it('a frozen, sealed or non-extensible context is marked (Node 20 and 24 alike), a copy never', async () => {
    let serialised = 0;
    const counted = () => ({ toJSON: () => (serialised++, { n: 1 }) });
    const lock: ((o: GateContext) => GateContext)[] = [Object.freeze, Object.seal, Object.preventExtensions];
    for (const locked of lock) {
      const context = gatewayCall(locked({ agent: 'a' }));
      const result = await run(registryOf(counted, true), context);
      expect(result.status).toBe('ok');
      expect(serialised).toBe(0);
      expect(result.content).toBe('{"n":1}');
      serialised = 0;
    }
    class Heir {
      agent = 'a';
    }
    const marked = gatewayCall({ agent: 'a' });
    const forgeries: GateContext[] = [
      Reflect.construct(Object, [marked], Heir) as GateContext,
      Object.setPrototypeOf({ agent: 'a' }, marked) as GateContext,
      new Proxy(marked, { getPrototypeOf: () => marked, has: () => true }),
      Object.defineProperties({}, Object.getOwnPropertyDescriptors(marked)) as GateContext,
    ];
    for (const forged of forgeries) {
      const before = serialised;
      await run(registryOf(counted, true), forged);
      expect(serialised).toBe(before + 1);
    }
  });
});
