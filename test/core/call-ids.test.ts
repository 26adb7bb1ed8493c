/**
 * Generated call ids (src/formats/index.ts `nextId`): `call_` and a process-wide count in base 36, one more per
 * call, whatever is kept between calls to make them (its last digit, and the digits before it once per 36 ids).
 */
import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';

describe('generated call ids', () => {
  it('are call_ and the count in base 36, one more per call, across every carry of the last digits', async () => {
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 'noop', parameters: { type: 'object' }, execute: () => 'ok' }));
    const ids: string[] = [];
    // 36 * 36 + 80 calls: the last digit wraps 38 times and the one before it once at least.
    for (let i = 0; i < 36 * 36 + 80; i++) ids.push((await registry.invoke('noop', {})).callId);
    const first = parseInt(ids[0]!.slice('call_'.length), 36);
    expect(ids[0]).toBe(`call_${first.toString(36)}`);
    ids.forEach((id, i) => expect(id).toBe(`call_${(first + i).toString(36)}`));
  });
});
