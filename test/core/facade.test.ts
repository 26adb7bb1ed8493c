/**
 * The gate's façade takes what the wings have — a registry — and resolves its environment inside src/gate/
 * (issue 21: `environmentOf` used only inside the gate). `npm run check:imports` keeps src/gate/environment.ts
 * to the gate and registry.ts; this keeps the façade from handing it out and the wings from naming it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as facade from '../../src/gate/index.js';
import { readCall } from '../../src/formats/index.js';
import { defineTool, ToolRegistry } from '../../src/index.js';

const SRC = join(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

describe("the gate's façade", () => {
  it('hands out no environment: nothing outside src/gate/ names environmentOf or a GateEnvironment but its owners', () => {
    expect(Object.keys(facade)).not.toContain('environmentOf');
    // The registry builds its environment; the contracts declare it; the allowlist cache is the gate's step 4 (its
    // joints, in allowlist-joint.ts, note the environment their slots' memos were made under).
    const owners = [
      'registry.ts',
      'allowlist-cache.ts',
      'allowlist-joint.ts',
      'contracts/gate.ts',
      'contracts/route.ts',
    ];
    const naming = sources(SRC)
      .map((file) => relative(SRC, file))
      .filter((file) => !file.startsWith('gate/') && !owners.includes(file))
      .filter((file) => /\benvironmentOf\b|\bGateEnvironment\b/.test(readFileSync(join(SRC, file), 'utf8')));
    expect(naming).toEqual([]);
  });

  it('withTools: the route’s own tools pass the gate in front of the registry, which is read as it stands at each call', async () => {
    const registry = new ToolRegistry();
    const peer = defineTool({
      name: 'agent:helper',
      description: 'a peer',
      parameters: { type: 'object' },
      execute: () => 'peer ran',
    });
    const source = facade.withTools(registry, new Map([[peer.canonicalName, peer]]));
    expect(facade.isRegistry(source)).toBe(false);
    expect(source.get('Agent:Helper')).toBe(peer);
    const route = { name: 'runner', grouped: false } as const;
    // The agent declares its peer (without a declaration it declares the registered tools only).
    const context = { agent: { name: 'planner', tools: ['agent:helper', 'search'] } };
    const [first] = await facade.dispatchCalls(
      [readCall({ name: 'agent:helper', arguments: {} })],
      context,
      source,
      route,
    );
    expect(first).toMatchObject({ status: 'ok', value: 'peer ran' });
    // Registered after the source was made: found through it, and decided through it.
    registry.register(
      defineTool({ name: 'search', description: 's', parameters: { type: 'object' }, execute: () => 'searched' }),
    );
    expect(source.get('search')?.name).toBe('search');
    const [second] = await facade.dispatchCalls([readCall({ name: 'search', arguments: {} })], context, source, route);
    expect(second).toMatchObject({ status: 'ok', value: 'searched' });
    expect(() => facade.withTools(source, new Map())).toThrow(TypeError);
  });
});
