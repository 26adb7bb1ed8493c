/**
 * Attack on the snapshot's primitive wrappers (src/gate/snapshot.ts `read`): an object that passes
 * `instanceof Number` / `String` / `Boolean` (a subclass, or one made on their prototype) had its own `valueOf`'s
 * answer handed on as it was — the caller's live object, unfrozen and unread, so a cycle went through and the
 * caller's later mutation reached the tool. JSON.stringify turns a wrapper into a primitive (ToNumber, ToString).
 */
import { describe, expect, it } from 'vitest';
import { snapshotArguments } from '../../src/gate/snapshot.js';
import { defineTool, ToolRegistry } from '../../src/index.js';

function deepFrozen(value: unknown, seen = new Set<unknown>()): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (seen.has(value)) return false; // a cycle: no snapshot holds one
  seen.add(value);
  if (!Object.isFrozen(value)) return false;
  return Object.values(value).every((item) => deepFrozen(item, new Set(seen)));
}

class SneakyNumber extends Number {
  readonly inner: unknown;
  constructor(inner: unknown) {
    super(1);
    this.inner = inner;
  }
  override valueOf(): number {
    return this.inner as number; // an object, at run time
  }
}

describe('primitive wrappers whose valueOf answers an object', () => {
  it("a Number subclass: the tool gets no live object of the caller's, and no later mutation of it", async () => {
    const live = { path: '/tmp/safe' };
    const seen: string[] = [];
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'read_file',
        parameters: { type: 'object' },
        execute: async (args) => {
          await new Promise((resolve) => setTimeout(resolve, 5));
          seen.push(JSON.stringify(args));
          return deepFrozen(args) ? 'frozen' : 'live';
        },
      }),
    );
    const running = registry.dispatch([{ id: 'a', name: 'read_file', arguments: { target: new SneakyNumber(live) } }]);
    live.path = '/etc/shadow'; // after the decision
    const [result] = await running;
    expect(seen.join()).not.toContain('/etc/shadow');
    if (result!.status === 'ok') expect(result!.value).toBe('frozen');
  });

  it('an object made on String.prototype whose valueOf answers the arguments themselves: no cycle through', () => {
    const args: Record<string, unknown> = {};
    const wrapper = Object.create(String.prototype) as { valueOf(): unknown };
    wrapper.valueOf = () => args;
    args['self'] = wrapper;
    let snapshot: unknown;
    try {
      snapshot = snapshotArguments(args);
    } catch {
      return; // refused: fine
    }
    expect(deepFrozen(snapshot)).toBe(true);
    expect(() => JSON.stringify(snapshot)).not.toThrow();
  });

  it('real wrappers still read as JSON.stringify reads them', () => {
    const args = { n: new Number(4), s: new String('x'), b: new Boolean(false), nan: new Number(NaN) };
    expect(snapshotArguments(args)).toEqual(JSON.parse(JSON.stringify(args)));
  });
});
