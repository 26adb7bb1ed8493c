/**
 * Attack on the gateway calls' AbortController pool (execute.ts): a call stopped by the gate's own timeout
 * is settled (finish → unfollow) before its execution is aborted. A tool that watches `signal.aborted` with
 * no listener (polling, or a dependent AbortSignal.any) has its controller put back in the pool as if
 * finished; the abort that follows finds no controller, so the timed-out tool's signal never aborts, and the
 * next gateway call is handed the very same signal: cancelling that call aborts the old one's.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readCall } from '../../src/formats/index.js';
import { dispatchCalls, gatewayCall, releasesSignal, type GateContext, type ToolResult } from '../../src/gate/index.js';
import { defineTool, ToolRegistry } from '../../src/index.js';

afterEach(() => {
  vi.useRealTimers();
});

async function run(registry: ToolRegistry, name: string, context: GateContext): Promise<ToolResult> {
  const [result] = await dispatchCalls([readCall({ id: `c-${name}`, name, arguments: {} })], context, registry, {
    name: 'gateway',
    grouped: false,
  });
  return result as ToolResult;
}

describe('atk: a gateway call stopped by its timeout', () => {
  it('has its signal aborted, and that signal never serves a later call', async () => {
    const seen: AbortSignal[] = [];
    const registry = new ToolRegistry({ toolTimeoutMs: 20 });
    let release: () => void = () => undefined;
    // Keeps its signal and checks `aborted` (no listener): it runs past the gate's timeout. Both tools marked
    // as the gateway's upstream tools are (the pool's only users): a tool stopped by the timeout is not finished.
    registry.register(
      releasesSignal(
        defineTool({
          name: 'slow',
          parameters: { type: 'object' },
          execute: (_args, { signal }) => {
            seen.push(signal);
            return new Promise<string>((resolve) => (release = () => resolve(signal.aborted ? 'stopped' : 'ran')));
          },
        }),
      ),
    );
    let next: AbortSignal | undefined;
    registry.register(
      releasesSignal(
        defineTool({
          name: 'next',
          parameters: { type: 'object' },
          execute: (_args, { signal }) => {
            next = signal;
            return new Promise<string>((resolve) => setTimeout(() => resolve('next'), 30));
          },
        }),
      ),
    );
    const timedOut = await run(registry, 'slow', gatewayCall({ agent: 'a' }));
    expect(timedOut.status).toBe('error');
    expect(timedOut.content).toMatch(/did not finish within 20 ms/);
    // The gate told the caller the call was stopped: the tool must be told too.
    const abortedAtTimeout = seen[0]!.aborted;

    const cancel = new AbortController();
    const running = run(registry, 'next', gatewayCall({ agent: 'a', signal: cancel.signal }));
    cancel.abort(new Error('the client cancelled the next call'));
    await running;
    // One call's cancellation must not reach another call's signal.
    expect({ abortedAtTimeout, sameSignal: next === seen[0] }).toEqual({ abortedAtTimeout: true, sameSignal: false });
    release();
  });
});
