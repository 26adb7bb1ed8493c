/**
 * A tool's timeout without a timer per call (issue 25): every running tool's deadline sits in one shared
 * queue with at most one timer; a deadline still fires and aborts, a finished call leaves nothing queued,
 * and a call cancelled by the dispatch's signal is aborted as before.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { deadlineQueue } from '../../src/gate/execute.js';

function hanging(name: string, timeoutMs?: number, aborted: string[] = []) {
  return defineTool({
    name,
    parameters: { type: 'object' },
    ...(timeoutMs === undefined ? {} : { metadata: { timeoutMs } }),
    execute: (_args, { signal }) =>
      new Promise((resolve) => {
        signal.addEventListener('abort', () => {
          aborted.push(name);
          // Settling on abort must not win against the timeout.
          resolve('late');
        });
      }),
  });
}

/** Three tools that never settle, timed out at 20 ms, 60 ms and the registry's 120 ms; `aborted` in abort order. */
function threeLengths() {
  const aborted: string[] = [];
  const registry = new ToolRegistry({ toolTimeoutMs: 120 });
  registry.register(hanging('short', 20, aborted));
  registry.register(hanging('long', 60, aborted));
  registry.register(hanging('default', undefined, aborted));
  return { registry, aborted };
}

/** Each timed out at its own length, and aborted in the order they came due. */
function expectInDueOrder(
  aborted: readonly string[],
  results: Readonly<Record<'short' | 'long' | 'fallback', { readonly content: unknown }>>,
): void {
  expect(aborted).toEqual(['short', 'long', 'default']);
  expect(results.short.content).toMatch(/did not finish within 20 ms/);
  expect(results.long.content).toMatch(/did not finish within 60 ms/);
  expect(results.fallback.content).toMatch(/did not finish within 120 ms/);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('tool deadlines in one shared queue', () => {
  it('arms no timer per call: 200 async calls in a row set at most one timer', async () => {
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 'quick', parameters: { type: 'object' }, execute: async () => 'ok' }));
    const spy = vi.spyOn(globalThis, 'setTimeout');
    for (let i = 0; i < 200; i++) expect((await registry.invoke('quick', {})).status).toBe('ok');
    expect(spy.mock.calls.length).toBeLessThanOrEqual(1);
    expect(deadlineQueue().size).toBe(0);
  });

  it('fires each deadline of different lengths in its order, aborting the tool, while quick calls finish', async () => {
    const { registry, aborted } = threeLengths();
    registry.register(defineTool({ name: 'quick', parameters: { type: 'object' }, execute: async () => 'ok' }));
    const started = Date.now();
    const [long, short, fallback, quick] = await Promise.all([
      registry.invoke('long', {}),
      registry.invoke('short', {}),
      registry.invoke('default', {}),
      registry.invoke('quick', {}),
    ]);
    expect(quick).toMatchObject({ status: 'ok', content: 'ok' });
    expect(short).toMatchObject({ status: 'error', isError: true });
    expectInDueOrder(aborted, { short, long, fallback });
    expect(Date.now() - started).toBeGreaterThanOrEqual(115);
    expect(deadlineQueue().size).toBe(0);
  });

  it('deadlines of different lengths all past when the loop comes back fire in the order they came due', async () => {
    // The loop held up (a long synchronous stretch, a loaded machine) past all three: the one timer fires once and
    // finds them all due. They are aborted by their due times, not by the order their lengths were first queued
    // ('long' was started first; its queue came first): CI saw ['long', 'short', 'default'] under load.
    const { registry, aborted } = threeLengths();
    const calls = [registry.invoke('long', {}), registry.invoke('short', {}), registry.invoke('default', {})] as const;
    // Past the three deadlines: the turn closes when the loop moves on, so the stall starts after one.
    await new Promise((resolve) => setImmediate(resolve));
    const until = performance.now() + 200;
    while (performance.now() < until) {
      // the loop held up
    }
    const [long, short, fallback] = await Promise.all(calls);
    expectInDueOrder(aborted, { short, long, fallback });
    expect(deadlineQueue().size).toBe(0);
  });

  it('a timeout length whose queue emptied and was dropped is queued and fires again (the queue remembered last)', async () => {
    const aborted: string[] = [];
    const registry = new ToolRegistry();
    registry.register(hanging('short', 15, aborted));
    registry.register(
      defineTool({
        name: 'quick',
        parameters: { type: 'object' },
        metadata: { timeoutMs: 15 },
        execute: async () => 'ok',
      }),
    );
    for (let round = 0; round < 3; round++) {
      // A quick call of the same length first: the queue is the one remembered, then emptied.
      expect((await registry.invoke('quick', {})).status).toBe('ok');
      const timedOut = await registry.invoke('short', {});
      expect(timedOut).toMatchObject({ status: 'error', content: expect.stringContaining('within 15 ms') });
      expect(deadlineQueue().size).toBe(0);
    }
    expect(aborted).toEqual(['short', 'short', 'short']);
  });

  it('a deadline set after a longer one is armed for: the shorter one still fires first', async () => {
    const aborted: string[] = [];
    const registry = new ToolRegistry();
    registry.register(hanging('long', 400, aborted));
    registry.register(hanging('short', 15, aborted));
    const long = registry.invoke('long', {});
    await new Promise((r) => setTimeout(r, 5));
    const short = await registry.invoke('short', {});
    expect(short.content).toMatch(/within 15 ms/);
    expect(aborted).toEqual(['short']);
    expect((await long).content).toMatch(/within 400 ms/);
  });

  it('the dispatch signal still aborts a running tool, and its deadline leaves the queue', async () => {
    const aborted: string[] = [];
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'cancellable',
        parameters: { type: 'object' },
        execute: (_args, { signal }) =>
          new Promise((_resolve, reject) => {
            signal.addEventListener('abort', () => {
              aborted.push('cancellable');
              reject(new Error('cancelled by the caller'));
            });
          }),
      }),
    );
    const controller = new AbortController();
    const running = registry.invoke('cancellable', {}, { signal: controller.signal });
    expect(deadlineQueue().size).toBe(1);
    controller.abort(new Error('stop'));
    const result = await running;
    expect(result).toMatchObject({ status: 'error' });
    expect(result.content).toMatch(/cancelled by the caller/);
    expect(aborted).toEqual(['cancellable']);
    expect(deadlineQueue().size).toBe(0);
  });

  it("a call started by an abort as its length's last deadline expires still times out (the queue is not dropped under it)", async () => {
    // The abort of the first deadline starts a second call of the same timeout length while the timer's pass runs: the
    // queue of that length is then empty, the second deadline still in its open turn (src/deadlines.ts).
    const registry = new ToolRegistry();
    let second: Promise<unknown> | undefined;
    registry.register(
      defineTool({
        name: 'first',
        parameters: { type: 'object' },
        metadata: { timeoutMs: 20 },
        execute: (_args, { signal }) =>
          new Promise(() => {
            signal.addEventListener('abort', () => {
              second = registry.invoke('second', {});
            });
          }),
      }),
    );
    registry.register(hanging('second', 20));
    expect(await registry.invoke('first', {})).toMatchObject({
      status: 'error',
      content: expect.stringMatching(/20 ms/),
    });
    expect(second).toBeDefined();
    expect(await second).toMatchObject({
      status: 'error',
      content: expect.stringMatching(/did not finish within 20 ms/),
    });
    expect(deadlineQueue().size).toBe(0);
  });

  it('a tool that throws or returns a plain value is never queued', async () => {
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 'plain', parameters: { type: 'object' }, execute: () => 'ok' }));
    registry.register(
      defineTool({
        name: 'throws',
        parameters: { type: 'object' },
        execute: () => {
          throw new Error('kaboom');
        },
      }),
    );
    const plain = registry.invoke('plain', {});
    expect(deadlineQueue().size).toBe(0);
    expect(await plain).toMatchObject({ status: 'ok' });
    expect((await registry.invoke('throws', {})).content).toMatch(/kaboom/);
    expect(deadlineQueue().size).toBe(0);
  });

  it('a thenable is read as await reads it: a throwing then fails, a thenable of a thenable is adopted, a second call back is ignored', async () => {
    const registry = new ToolRegistry();
    const tools: Record<string, () => unknown> = {
      throwing: () => ({
        then() {
          throw new Error('then broke');
        },
      }),
      nested: () => ({ then: (ok: (v: unknown) => void) => ok({ then: (ok2: (v: unknown) => void) => ok2('inner') }) }),
      twice: () => ({
        then: (ok: (v: unknown) => void, fail: (e: unknown) => void) => {
          ok('first');
          fail(new Error('second'));
          ok('third');
        },
      }),
    };
    for (const [name, execute] of Object.entries(tools))
      registry.register(defineTool({ name, parameters: { type: 'object' }, execute }));
    expect(await registry.invoke('throwing', {})).toMatchObject({
      status: 'error',
      content: expect.stringMatching(/then broke/),
    });
    expect(await registry.invoke('nested', {})).toMatchObject({ status: 'ok', content: 'inner' });
    expect(await registry.invoke('twice', {})).toMatchObject({ status: 'ok', content: 'first' });
    const [chat] = await registry.executeToolCalls([
      { id: 'c1', type: 'function', function: { name: 'nested', arguments: '{}' } },
    ]);
    expect(chat).toEqual({ role: 'tool', tool_call_id: 'c1', content: 'inner' });
    expect(deadlineQueue().size).toBe(0);
  });

  it('a tool that settles after its deadline is reported once, as the timeout', async () => {
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'late',
        parameters: { type: 'object' },
        metadata: { timeoutMs: 10 },
        execute: () => new Promise((resolve) => setTimeout(() => resolve('too late'), 40)),
      }),
    );
    const executed: string[] = [];
    registry.onChange((e) => {
      if (e.type === 'tool_executed') executed.push(e.status);
    });
    const result = await registry.invoke('late', {});
    expect(result).toMatchObject({ status: 'error', content: expect.stringMatching(/within 10 ms/) });
    await new Promise((r) => setTimeout(r, 60));
    expect(executed).toEqual(['error']);
  });

  it('the shared timer does not hold a finished process open for the 60 s timeout', async () => {
    const script = join(mkdtempSync(join(tmpdir(), 'toolgate-deadline-')), 'quick.mts');
    writeFileSync(
      script,
      [
        `import { defineTool, ToolRegistry } from ${JSON.stringify(join(process.cwd(), 'src/index.ts'))};`,
        `const registry = new ToolRegistry();`,
        `registry.register(defineTool({ name: 'quick', parameters: { type: 'object' }, execute: async () => 'ok' }));`,
        `console.log((await registry.invoke('quick', {})).status);`,
      ].join('\n'),
    );
    // Held open by the deadline's timer, the child would run for a minute and be killed at 30 s.
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { timeout: 30_000 });
    expect(stdout.trim()).toBe('ok');
  }, 40_000);

  it('a queued deadline still holds the process open: a tool that never settles is reported as its timeout', async () => {
    const script = join(mkdtempSync(join(tmpdir(), 'toolgate-deadline-')), 'hung.mts');
    writeFileSync(
      script,
      [
        `import { defineTool, ToolRegistry } from ${JSON.stringify(join(process.cwd(), 'src/index.ts'))};`,
        `const registry = new ToolRegistry();`,
        `registry.register(defineTool({ name: 'hung', parameters: { type: 'object' }, metadata: { timeoutMs: 200 }, execute: () => new Promise(() => {}) }));`,
        `const result = await registry.invoke('hung', {});`,
        `console.log(result.status, result.content);`,
      ].join('\n'),
    );
    // Nothing but the deadline keeps the child's event loop: without it the child would exit before the timeout.
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { timeout: 30_000 });
    expect(stdout.trim()).toMatch(/^error .*within 200 ms/);
  }, 40_000);
});
