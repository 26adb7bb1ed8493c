/**
 * Attack on execute (src/gate/execute.ts, also before invoke3): a tool's return value is asked for its `then` outside
 * the try around the tool's call, so a value whose `then` getter throws made `invoke` reject with the tool's error
 * instead of answering an error result ("nothing here throws"): no `tool_executed` event, and the call's listener on
 * the dispatch's signal was never removed.
 */
import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';

describe("a tool's value whose then getter throws", () => {
  it('is an error result, its listener on the dispatch signal removed', async () => {
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'odd',
        parameters: { type: 'object' },
        execute: () => ({
          get then(): never {
            throw new Error('then getter');
          },
        }),
      }),
    );
    const controller = new AbortController();
    let listeners = 0;
    const add = controller.signal.addEventListener.bind(controller.signal);
    const remove = controller.signal.removeEventListener.bind(controller.signal);
    controller.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners++;
      add(...args);
    }) as typeof add;
    controller.signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      listeners--;
      remove(...args);
    }) as typeof remove;
    const result = await registry.invoke('odd', {}, { signal: controller.signal }).catch((error: unknown) => error);
    expect(result).toMatchObject({ status: 'error', isError: true });
    expect((result as { content: string }).content).toMatch(/then getter/);
    expect(listeners).toBe(0);
  });
});
