/**
 * Issue 10, attacks 1 and 2 through the registry's public API: the call that runs is the call that was
 * decided. Each test failed on the main before the one dispatch path (mutable decided arguments; a call
 * approved after the registry changed still ran).
 */
import { describe, expect, it } from 'vitest';
import { defineTool, PermissionPolicy, ToolRegistry, type RegistryEvent } from '../../src/index.js';

/** A registry with `read` (allowed only under /tmp/) and `wipe` (ask), recording what `read` received. */
function setUp(options: { readonly forward?: boolean } = {}) {
  const registry = new ToolRegistry({ confusables: 'off' });
  const received: unknown[] = [];
  registry.register(
    defineTool({
      name: 'read',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      // `forward`: what an MCP client does with its arguments (serialise them for the wire).
      execute: (args) => {
        received.push(options.forward ? JSON.parse(JSON.stringify(args)) : args['path']);
        return 'ok';
      },
    }),
  );
  registry.register(defineTool({ name: 'wipe', parameters: { type: 'object' }, execute: () => 'wiped' }));
  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: [
        {
          name: 'tmp_only',
          tools: ['read'],
          match: (_tool, params) => typeof params['path'] === 'string' && params['path'].startsWith('/tmp/'),
          result: 'allow',
        },
        { name: 'ask_wipe', tools: ['wipe'], result: 'ask' },
      ],
      fallback: 'deny',
    }),
  );
  return { registry, received };
}

describe('attack 1: decided arguments cannot change what executes', () => {
  it('a tool_decided listener that rewrites decision.parameters does not change what runs', async () => {
    const { registry, received } = setUp();
    registry.onChange((event: RegistryEvent) => {
      if (event.type !== 'tool_decided') return;
      try {
        (event.decision.parameters as Record<string, unknown>)['path'] = '/etc/shadow';
      } catch {
        // frozen: the attempt throws in strict mode
      }
    });
    const result = await registry.invoke('read', { path: '/tmp/notes' });
    expect(result.status).toBe('ok');
    expect(received).toEqual(['/tmp/notes']);
    expect(Object.isFrozen(result.decision.parameters)).toBe(true);
  });

  it('a permission handler that rewrites request.parameters does not change what runs', async () => {
    const { registry, received } = setUp();
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [
          {
            name: 'ask_read',
            tools: ['read'],
            match: (_tool, params) => String(params['path']).startsWith('/tmp/'),
            result: 'ask',
          },
        ],
      }),
    );
    registry.setPermissionHandler((request) => {
      try {
        (request.parameters as Record<string, unknown>)['path'] = '/etc/shadow';
      } catch {
        // frozen
      }
      return 'allow' as const;
    });
    expect((await registry.invoke('read', { path: '/tmp/notes' })).status).toBe('ok');
    expect(received).toEqual(['/tmp/notes']);
  });

  it('the caller mutating its input while a later call of the batch waits for approval does not change what runs', async () => {
    const { registry, received } = setUp();
    const input = { path: '/tmp/notes' };
    registry.setPermissionHandler(async () => {
      input.path = '/etc/shadow'; // the caller still holds the object it passed
      await new Promise((resolve) => setTimeout(resolve, 5));
      return 'allow' as const;
    });
    const results = await registry.dispatch([
      { id: 'r', name: 'read', arguments: input },
      { id: 'w', name: 'wipe', arguments: {} },
    ]);
    expect(results.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(received).toEqual(['/tmp/notes']);
    expect(results[0]!.decision.parameters).toEqual({ path: '/tmp/notes' });
  });

  it('a getter is read once: the value the rules judged is the value the tool gets', async () => {
    const { registry, received } = setUp();
    let reads = 0;
    const args = {
      get path() {
        reads++;
        return reads <= 2 ? '/tmp/notes' : '/etc/shadow';
      },
    };
    const result = await registry.invoke('read', args);
    expect(reads).toBe(1);
    expect(result.status).toBe('ok');
    expect(received).toEqual(['/tmp/notes']);
  });

  it('a Proxy is read once into a plain copy', async () => {
    const { registry, received } = setUp();
    let reads = 0;
    const args = new Proxy({ path: '' } as Record<string, unknown>, {
      get: (target, key) => (key === 'path' ? (++reads <= 2 ? '/tmp/notes' : '/etc/shadow') : target[key as string]),
    });
    const result = await registry.invoke('read', args);
    expect(result.status).toBe('ok');
    expect(received).toEqual(['/tmp/notes']);
    expect(reads).toBe(1);
  });

  it('a non-enumerable toJSON is applied before the rules judge, so what is judged is what goes on the wire', async () => {
    const { registry, received } = setUp({ forward: true });
    const args = { path: '/tmp/notes' };
    Object.defineProperty(args, 'toJSON', { value: () => ({ path: '/etc/shadow' }), enumerable: false });
    const result = await registry.invoke('read', args);
    expect(received).toEqual([]);
    expect(result.status).toBe('refused');
    expect(result.decision).toMatchObject({ effect: 'deny', parameters: { path: '/etc/shadow' } });
  });

  it('arguments JSON cannot carry (a cycle, a BigInt, a throwing getter) are refused, never run', async () => {
    const { registry, received } = setUp();
    const cyclic: Record<string, unknown> = { path: '/tmp/a' };
    cyclic['self'] = cyclic;
    const throwing = {
      get path(): string {
        throw new Error('boom');
      },
    };
    for (const args of [cyclic, { path: '/tmp/a', n: 1n }, throwing]) {
      const result = await registry.invoke('read', args);
      expect(result.status).toBe('refused');
      expect(result.decision).toMatchObject({ stage: 'validation', by: 'invalid_arguments' });
    }
    expect(received).toEqual([]);
  });
});

/** A registry whose only tool, `echo` (allowed), records the arguments it gets. */
function echoing() {
  const registry = new ToolRegistry({ confusables: 'off' });
  const seen: unknown[] = [];
  registry.register(
    defineTool({ name: 'echo', parameters: { type: 'object' }, execute: (args) => (seen.push(args), 'ok') }),
  );
  registry.setPermissionPolicy(new PermissionPolicy({ rules: [{ name: 'echo', tools: ['echo'], result: 'allow' }] }));
  return { registry, seen };
}

describe('arguments given as JSON text (frozen where JSON.parse made them, not copied)', () => {
  it('are deep-frozen, with a number JSON cannot hold as a double read as null', async () => {
    const { registry, seen } = echoing();
    const [result] = await registry.dispatch([
      { id: 'e', name: 'echo', arguments: '{"a": {"b": [1, {"c": 2}]}, "big": 1e400, "list": [1e400], "toJSON": 3}' },
    ]);
    expect(result!.status).toBe('ok');
    const args = seen[0] as { a: { b: [number, object] }; big: unknown; list: unknown[] };
    expect(args).toEqual({ a: { b: [1, { c: 2 }] }, big: null, list: [null], toJSON: 3 });
    for (const part of [args, args.a, args.a.b, args.a.b[1], args.list]) expect(Object.isFrozen(part)).toBe(true);
    expect(result!.decision.parameters).toBe(args);
  });

  it('refuse a "__proto__" key at any depth', async () => {
    const { registry, received } = setUp();
    for (const text of [
      '{"__proto__": {"path": "/tmp/x"}, "path": "/tmp/a"}',
      '{"path": "/tmp/a", "o": [{"__proto__": 1}]}',
    ]) {
      const [result] = await registry.dispatch([{ id: 'r', name: 'read', arguments: text }]);
      expect(result!.status).toBe('refused');
      expect(result!.decision).toMatchObject({ stage: 'validation', by: 'invalid_arguments' });
      expect(result!.decision.reason).toMatch(/__proto__/);
    }
    expect(received).toEqual([]);
  });
});

describe('the snapshot of object arguments', () => {
  it('copies nested objects and arrays with JSON semantics, frozen, leaving the input untouched', async () => {
    const { registry, seen } = echoing();
    const input = {
      s: 'x',
      n: Number.NaN,
      list: [1, undefined, () => 1, Symbol('s'), Infinity, new String('w'), { d: new Date(0) }],
      skip: undefined,
      fn: () => 1,
    };
    const result = await registry.invoke('echo', input);
    expect(result.status).toBe('ok');
    expect(seen[0]).toEqual(JSON.parse(JSON.stringify(input)));
    expect(seen[0]).not.toBe(input);
    expect(Object.isFrozen((seen[0] as { list: object }).list)).toBe(true);
    expect(Object.isFrozen(input)).toBe(false);
  });

  it('a toJSON that dispatches a call of its own does not disturb the outer read (cycles still found)', async () => {
    const { registry, received } = setUp();
    const inner: Record<string, unknown> = { path: '/tmp/inner' };
    inner['self'] = inner;
    const outer = {
      path: '/tmp/outer',
      nested: {
        toJSON: () => {
          void registry.invoke('read', { path: '/tmp/nested' });
          return { ok: true };
        },
      },
    };
    expect((await registry.invoke('read', outer)).status).toBe('ok');
    expect((await registry.invoke('read', inner)).status).toBe('refused');
    expect((await registry.invoke('read', { path: '/tmp/after', a: [{ b: 1 }] })).status).toBe('ok');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(received).toEqual(expect.arrayContaining(['/tmp/outer', '/tmp/nested', '/tmp/after']));
  });
});

describe('attack 2: a registry change during an approval is seen before the call runs', () => {
  it('a call approved after its tool was unregistered and a deny-all policy installed does not run', async () => {
    const { registry } = setUp();
    let ran = false;
    registry.unregister('wipe');
    registry.register(defineTool({ name: 'wipe', parameters: { type: 'object' }, execute: () => (ran = true) }));
    registry.setPermissionHandler(async () => {
      registry.unregister('wipe');
      registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'deny' }));
      return 'allow' as const;
    });
    const result = await registry.invoke('wipe', {});
    expect(ran).toBe(false);
    expect(result.status).toBe('refused');
    expect(result.decision).toMatchObject({ effect: 'deny', stage: 'lookup' });
  });

  it('a deny-all policy installed while the call waited for approval refuses it', async () => {
    const { registry } = setUp();
    let ran = false;
    registry.unregister('wipe');
    registry.register(defineTool({ name: 'wipe', parameters: { type: 'object' }, execute: () => (ran = true) }));
    const decided: string[] = [];
    registry.onChange((e) => void (e.type === 'tool_decided' && decided.push(`${e.decision.effect}:${e.decision.by}`)));
    registry.setPermissionHandler(async () => {
      registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'deny' }));
      return 'allow' as const;
    });
    const result = await registry.invoke('wipe', {});
    expect(ran).toBe(false);
    expect(result.decision).toMatchObject({ effect: 'deny', stage: 'policy', by: 'fallback' });
    expect(decided.at(-1)).toBe('deny:fallback');
  });

  it('an earlier call of a batch is decided again when the registry changed while a later one waited', async () => {
    const { registry, received } = setUp();
    registry.setPermissionHandler(async () => {
      registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'deny' }));
      return 'allow' as const;
    });
    const results = await registry.dispatch([
      { name: 'read', arguments: { path: '/tmp/notes' } },
      { name: 'wipe', arguments: {} },
    ]);
    expect(results.map((r) => r.status)).toEqual(['refused', 'refused']);
    expect(received).toEqual([]);
  });

  it('an approval stands when nothing changed (no second ask)', async () => {
    const { registry } = setUp();
    let asked = 0;
    registry.setPermissionHandler(async () => {
      asked++;
      return 'allow' as const;
    });
    const results = await registry.dispatch([
      { name: 'read', arguments: { path: '/tmp/notes' } },
      { name: 'wipe', arguments: {} },
    ]);
    expect(results.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(asked).toBe(1);
  });
});
