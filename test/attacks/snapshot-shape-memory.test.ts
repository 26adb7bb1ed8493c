/**
 * Attack on the snapshot's shape copiers (src/gate/snapshot.ts `copierOf` / `makeShape`, a336b34): the first
 * record of each new shape (≤ 16 keys, up to 1,024 shapes in the process) gets a function made from its keys' JSON
 * text, kept for the life of the process. The bound counts shapes, never the length of their keys: a key of any
 * length is kept (in the shape's `names`), and twice more in the function's source, JSON-escaped (a control
 * character is six characters there). The snapshot runs before the allowlist and the policy, so calls that are
 * refused — by a tenant with no tool at all — fill it; the gateway hands a client's `arguments` object (a 4 MB
 * body) to the same snapshot. Before a336b34 a call retained nothing once it was answered.
 *
 * Here 16 refused calls, each with one 256 K-character key, retain ~53 MB for good (1,024 such calls: ~3.4 GB;
 * over the gateway, a 4 MB body of a plain ASCII key keeps ~12 MB a request, 1,024 requests ~12 GB: the process
 * dies for every tenant). Making each function also parses its whole key twice, ~30 ms a call here.
 */
import { describe, expect, it } from 'vitest';
import { heapAfterGc } from '../heap.js';
import { defineTool, PermissionPolicy, ToolRegistry } from '../../src/index.js';

describe('the shape copiers keep nothing a refused call brought', () => {
  it('16 refused calls with one 256 K-character key each retain far less than their keys', async () => {
    const ran: unknown[] = [];
    const registry = new ToolRegistry();
    registry.register(
      defineTool({ name: 'lookup', parameters: { type: 'object' }, execute: (args) => (ran.push(args), 'ok') }),
    );
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'deny' }));
    const tenant = { tenant: { id: 'attacker', tools: [] as string[] } }; // an empty layer refuses everything
    const before = heapAfterGc();
    for (let i = 0; i < 16; i++) {
      const key = `${String(i).padStart(4, '0')}${'\u0001'.repeat(256 * 1024)}`;
      const result = await registry.invoke('lookup', { [key]: 1 }, tenant);
      expect(result.status).not.toBe('ok');
    }
    expect(ran).toEqual([]);
    const retained = heapAfterGc() - before;
    // The keys themselves are 16 x 256 K one-byte characters (4 MB) and are the caller's, gone after each call.
    expect(retained).toBeLessThan(16 * 1024 * 1024);
  });
});
