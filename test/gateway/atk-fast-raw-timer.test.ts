// Attacks on the raw requests' one shared deadline timer (upstream-raw.ts) with REAL timers: a timeout that
// is lost (a call that hangs) when the timer fires early (libuv's whole milliseconds) or a shorter request
// comes after a longer one, an answer that arrives after the timeout was reported and is applied anyway,
// a cancellation that does not stop the request it names, and a timeout too long for Node's timer (past
// 2^31 - 1 ms: Node fires such a timer after 1 ms, so the shared timer would spin every millisecond).
import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { describe, expect, it, vi } from 'vitest';
import { RawRequests } from '../../src/gateway/upstream-raw.js';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { idOf, RAW_TOOL, recorder } from './fixtures/raw-recorder.js';

const TOOL = RAW_TOOL;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('attacks on the raw requests’ shared deadline timer (real timers)', () => {
  it('times every request out near its own deadline, however the deadlines interleave; a late answer is dropped', async () => {
    const { transport, sent } = recorder();
    const raw = new RawRequests(() => transport);
    const started = performance.now();
    const outcomes = new Map<number, { at: number; how: string }>();
    const timeouts = [400, 25, 5000, 60, 1, 0, 130, 25];
    const calls = timeouts.map((timeout, n) =>
      raw.callTool({ name: 'echo', arguments: { n } }, TOOL, { timeout }).then(
        () => outcomes.set(n, { at: performance.now() - started, how: 'answered' }),
        (error: unknown) => {
          expect(error).toBeInstanceOf(SdkError);
          expect((error as SdkError).code).toBe(SdkErrorCode.RequestTimeout);
          outcomes.set(n, { at: performance.now() - started, how: 'timed out' });
        },
      ),
    );
    const ids = sent.map(idOf);
    // The long one is answered at 200 ms: never timed out.
    setTimeout(
      () => raw.take({ jsonrpc: '2.0', id: ids[2]!, result: { content: [{ type: 'text', text: 'ok' }] } } as never),
      200,
    );
    await Promise.all(calls);
    for (const [n, timeout] of timeouts.entries()) {
      const outcome = outcomes.get(n)!;
      if (n === 2) {
        expect(outcome.how).toBe('answered');
        continue;
      }
      expect(outcome.how, `request ${n}`).toBe('timed out');
      // Never before its timeout (1 ms of libuv rounding aside), and not long after (a lost timer would hang).
      expect(outcome.at, `request ${n}`).toBeGreaterThanOrEqual(timeout - 1);
      expect(outcome.at, `request ${n}`).toBeLessThan(timeout + 1000);
    }
    // Answers arriving after the timeouts: taken off the wire, applied to nothing.
    for (const id of ids) expect(raw.take({ jsonrpc: '2.0', id, result: { content: [] } } as never)).toBe(true);
    expect(outcomes.size).toBe(timeouts.length);
  });

  it('a cancellation stops exactly the request whose signal aborts, not one sent with another signal', async () => {
    const { transport, sent } = recorder();
    const raw = new RawRequests(() => transport);
    const a = new AbortController();
    const b = new AbortController();
    const first = raw.callTool({ name: 'echo', arguments: {} }, TOOL, { timeout: 5000, signal: a.signal });
    const second = raw.callTool({ name: 'echo', arguments: {} }, TOOL, { timeout: 5000, signal: b.signal });
    const [idA, idB] = sent.map(idOf);
    a.abort(new Error('stop A'));
    await expect(first).rejects.toThrow('stop A');
    raw.take({ jsonrpc: '2.0', id: idB!, result: { content: [{ type: 'text', text: 'B' }] } } as never);
    await expect(second).resolves.toMatchObject({ content: [{ text: 'B' }] });
    // B's controller aborting now changes nothing; A's late answer is dropped.
    b.abort();
    expect(raw.take({ jsonrpc: '2.0', id: idA!, result: { content: [] } } as never)).toBe(true);
    const cancels = sent.filter((m) => (m as { method?: string }).method === 'notifications/cancelled');
    expect(cancels.map((m) => (m as unknown as { params: { requestId: string } }).params.requestId)).toEqual([idA]);
  });

  it('a timeout past 2^31 - 1 ms does not make the shared timer fire every millisecond', async () => {
    const { transport } = recorder();
    const raw = new RawRequests(() => transport);
    const made = vi.spyOn(globalThis, 'setTimeout');
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    const stop = new AbortController();
    try {
      const pending = raw.callTool({ name: 'echo', arguments: {} }, TOOL, {
        timeout: 3_000_000_000,
        signal: stop.signal,
      });
      const outcome = pending.then(
        () => 'answered',
        (error: unknown) => String(error),
      );
      await sleep(100);
      const armed = made.mock.calls.filter(([, ms]) => typeof ms === 'number' && ms > 1000).length;
      const all = made.mock.calls.length;
      stop.abort(new Error('enough'));
      expect(await outcome).toContain('enough');
      // One arming (the sleep's own timer aside), not one per millisecond.
      expect(all - 1, `setTimeout called ${all} times in 100 ms`).toBeLessThanOrEqual(2);
      expect(armed).toBeLessThanOrEqual(1);
      expect(warnings.filter((w) => w === 'TimeoutOverflowWarning')).toEqual([]);
    } finally {
      made.mockRestore();
      process.off('warning', onWarning);
    }
  });

  it('a timeout past 2^31 - 1 ms still times the request out at its own deadline, not before', async () => {
    vi.useFakeTimers();
    try {
      const { transport } = recorder();
      const raw = new RawRequests(() => transport);
      let outcome = 'waiting';
      const pending = raw.callTool({ name: 'echo', arguments: {} }, TOOL, { timeout: 3_000_000_000 }).then(
        () => (outcome = 'answered'),
        (error: unknown) => (outcome = String(error)),
      );
      await vi.advanceTimersByTimeAsync(2 ** 31);
      expect(outcome).toBe('waiting');
      await vi.advanceTimersByTimeAsync(3_000_000_000 - 2 ** 31 + 10);
      await pending;
      expect(outcome).toContain('Request timed out');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('the gate’s deadline timer under the gateway’s tool timeout (callTimeoutMs + 1 s)', () => {
  it('a tool timeout past 2^31 - 1 ms does not make the gate’s shared timer fire every millisecond', async () => {
    const registry = new ToolRegistry({ toolTimeoutMs: 3_000_000_000 });
    let finish: (value: string) => void = () => undefined;
    registry.register(
      defineTool({
        name: 'waits',
        parameters: { type: 'object' },
        execute: () => new Promise<string>((resolve) => (finish = resolve)),
      }),
    );
    const made = vi.spyOn(globalThis, 'setTimeout');
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const running = registry.invoke('waits', {});
      await sleep(100);
      const all = made.mock.calls.length;
      finish('done');
      expect(await running).toMatchObject({ status: 'ok', content: 'done' });
      expect(all - 1, `setTimeout called ${all} times in 100 ms`).toBeLessThanOrEqual(2);
      expect(warnings.filter((w) => w === 'TimeoutOverflowWarning')).toEqual([]);
    } finally {
      made.mockRestore();
      process.off('warning', onWarning);
    }
  });
});
