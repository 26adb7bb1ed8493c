/**
 * Hostile input: names and arguments built to confuse, exhaust or pollute. Each gets a clear refusal or
 * ConfigurationError, nothing crashes, nothing runs that should not, and Object.prototype stays clean.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  defineTool,
  PermissionPolicy,
  ToolAllowlist,
  ToolRegistry,
  type ToolResult,
} from '../../src/index.js';
import { type ToolCallInput } from '../../src/formats/entry.js';
import { canonical, CANONICAL_CACHE_LIMIT, canonicalCacheSize } from '../../src/names.js';
import { size } from './size.js';

const MB = 1024 * 1024;
const INVISIBLE = {
  'right-to-left override': 'search\u202e',
  'left-to-right isolate': '\u2066search\u2069',
  'zero-width space': 'sea\u200brch',
  'zero-width joiner': 'sea\u200drch',
  'byte order mark': '\ufeffsearch',
  'soft hyphen': 'sea\u00adrch',
  'lone high surrogate': 'search\ud800',
  'lone low surrogate': '\udc00search',
  NUL: 'search\u0000',
} as const;
const OBJECT_KEYS = [
  '__proto__',
  'toString',
  'constructor',
  'hasOwnProperty',
  'valueOf',
  'prototype',
  '__defineGetter__',
] as const;

function registryWith(names: readonly string[], ran: string[]): ToolRegistry {
  const registry = new ToolRegistry({ handlerTimeoutMs: 5 });
  for (const name of names) {
    registry.register({
      name,
      parameters: { type: 'object', properties: { q: { type: 'string' } }, additionalProperties: false },
      execute: (args) => {
        ran.push(name);
        return { ok: true, keys: Object.keys(args).length };
      },
    });
  }
  return registry;
}

function assertClean(): void {
  const probe = {} as Record<string, unknown>;
  expect(probe['polluted']).toBeUndefined();
  expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted')).toBe(false);
  expect(typeof probe.toString).toBe('function');
}

afterEach(assertClean);

describe('hostile names', () => {
  for (const [what, name] of Object.entries(INVISIBLE)) {
    it(`a declared name with a ${what} is a ConfigurationError everywhere names are declared`, () => {
      expect(() => defineTool({ name, parameters: { type: 'object' }, execute: () => 'x' })).toThrow(
        ConfigurationError,
      );
      expect(() => new ToolRegistry().register({ name, parameters: { type: 'object' }, execute: () => 'x' })).toThrow(
        ConfigurationError,
      );
      expect(() => ToolAllowlist.resolve(['fetch', name])).toThrow(ConfigurationError);
      expect(() => ToolAllowlist.resolve(['fetch']).narrowed([name])).toThrow(ConfigurationError);
    });

    it(`a called name with a ${what} is refused, and 'search' does not run`, async () => {
      const ran: string[] = [];
      const registry = registryWith(['search'], ran);
      const result = await registry.invoke(name, {});
      expect(result.status).toBe('refused');
      expect(result.decision.effect).toBe('deny');
      expect(result.content).toMatch(/^Tool call rejected: /);
      expect(ran).toEqual([]);
      expect(ToolAllowlist.resolve(['search']).permits(name)).toBe(false);
    });
  }

  it('U+0085 NEXT LINE is a control character when declared, and White_Space trimmed off a called name', async () => {
    expect(() => ToolAllowlist.resolve(['search\u0085'])).toThrow(ConfigurationError);
    const ran: string[] = [];
    const result = await registryWith(['search'], ran).invoke('\u0085search\u0085', {});
    expect(result.status).toBe('ok');
    expect(ran).toEqual(['search']);
  });

  it('names that trim or normalise to nothing are ConfigurationErrors when declared, refusals when called', async () => {
    for (const name of ['', ' ', '\u3000\u2003', '\u00a0']) {
      expect(() => ToolAllowlist.resolve([name])).toThrow(ConfigurationError);
    }
    const ran: string[] = [];
    const result = await registryWith(['search'], ran).invoke('\u3000', {});
    expect(result.status).toBe('refused');
    expect(ran).toEqual([]);
  });

  it('a 1 MB called name is refused quickly, is not cached, and is not echoed back whole', async () => {
    const ran: string[] = [];
    const registry = registryWith(['search'], ran);
    const before = canonicalCacheSize();
    for (const name of ['s'.repeat(MB), 'Ｓ'.repeat(MB), `search${' '.repeat(MB)}`, `${'\u3000'.repeat(MB)}search`]) {
      const started = performance.now();
      const [result] = (await registry.executeToolCalls([
        { type: 'tool_use', id: 'big', name, input: {} },
      ])) as unknown as [{ content: string; is_error?: true }];
      expect(performance.now() - started).toBeLessThan(5_000);
      if (canonical(name) === 'search') {
        // Whitespace padding canonicalises to a registered name: it runs, as 'search' would.
        expect(result.is_error).toBeUndefined();
      } else {
        expect(result.is_error).toBe(true);
      }
      expect(result.content.length).toBeLessThan(2_000);
    }
    expect(canonicalCacheSize()).toBeLessThanOrEqual(Math.max(before, CANONICAL_CACHE_LIMIT));
    expect(ran).toEqual(['search', 'search']);
  });

  it('a 1 MB name padded to a registered one but cut by a layer gets a bounded refusal', async () => {
    const ran: string[] = [];
    const registry = registryWith(['search'], ran);
    const result = await registry.invoke(`search${'\u2003'.repeat(MB)}`, {}, { tenant: { tools: [] } });
    expect(result.status).toBe('refused');
    expect(result.decision.layer).toBe('tenant');
    expect(result.content.length).toBeLessThan(2_000);
    expect(ran).toEqual([]);
  });

  it(`endless unique names keep the canonical cache within ${CANONICAL_CACHE_LIMIT} entries`, async () => {
    const n = size(100_000, 2_000_000);
    for (let i = 0; i < n; i++) canonical(`Tool-${i}-Ｘ`);
    expect(canonicalCacheSize()).toBeLessThanOrEqual(CANONICAL_CACHE_LIMIT);
    // And through the dispatch path, with unique unknown names in every call shape.
    const ran: string[] = [];
    const registry = registryWith(['search'], ran);
    const calls: ToolCallInput[] = [];
    for (let i = 0; i < size(5_000, 50_000); i++)
      calls.push({ type: 'function_call', call_id: `c${i}`, name: `ＵＮＫＮＯＷＮ-${i}`, arguments: '{}' });
    const results = await registry.executeToolCalls(calls);
    expect(results.every((r) => 'output' in r && r.output.startsWith('Tool call rejected'))).toBe(true);
    expect(canonicalCacheSize()).toBeLessThanOrEqual(CANONICAL_CACHE_LIMIT);
    expect(ran).toEqual([]);
  });

  it('Object.prototype keys as tool names: unknown ones are refused, registered ones are ordinary tools', async () => {
    const ran: string[] = [];
    const plain = registryWith(['search'], ran);
    for (const key of OBJECT_KEYS) {
      const result = await plain.invoke(key, {});
      expect(result.status, key).toBe('refused');
      expect(result.decision.by).toBe('unknown_tool');
      expect(plain.has(key)).toBe(false);
      expect(plain.get(key)).toBeUndefined();
      expect(ToolAllowlist.resolve(['search']).decide(key)).toEqual({
        tool: key,
        permitted: false,
        reason: 'not_declared',
      });
      expect(ToolAllowlist.resolve(['search'], { tenant: [key], caller: [key] }).permits('search')).toBe(false);
    }
    expect(ran).toEqual([]);

    const odd = registryWith([...OBJECT_KEYS], ran);
    odd.setPermissionPolicy(
      new PermissionPolicy({
        rules: [{ name: 'only_proto', tools: ['__proto__'], result: 'allow' }],
        fallback: 'deny',
      }),
    );
    const results = await odd.dispatch(
      OBJECT_KEYS.map((name) => ({ name, arguments: {} })),
      { tenant: { tools: ['__proto__', 'toString'] } },
    );
    expect(results.map((r) => [r.tool, r.status, r.decision.by])).toEqual([
      ['__proto__', 'ok', 'rule'],
      ['toString', 'refused', 'fallback'],
      ['constructor', 'refused', 'allowlist'],
      ['hasOwnProperty', 'refused', 'allowlist'],
      ['valueOf', 'refused', 'allowlist'],
      ['prototype', 'refused', 'allowlist'],
      ['__defineGetter__', 'refused', 'allowlist'],
    ]);
    expect(ran).toEqual(['__proto__']);
    expect(
      odd.schemas('anthropic', { tenant: { tools: ['__proto__'] } }).map((s) => ('name' in s ? s.name : '')),
    ).toEqual(['__proto__']);
  });

  it('a call whose name is not a string is an unreadable call, refused', async () => {
    const ran: string[] = [];
    const registry = registryWith(['search'], ran);
    const sneaky = { toString: () => 'search' };
    const results = await registry.dispatch([
      { name: sneaky } as unknown as ToolCallInput,
      { type: 'tool_use', id: 'x', name: ['search'] } as unknown as ToolCallInput,
    ]);
    expect(results.map((r) => r.decision.by)).toEqual(['malformed_call', 'malformed_call']);
    expect(ran).toEqual([]);
  });
});

describe('hostile arguments', () => {
  async function run(
    args: unknown,
    parameters: Parameters<typeof defineTool>[0]['parameters'] = {
      type: 'object',
      properties: { q: { type: 'string' } },
    },
  ): Promise<{ result: ToolResult; ran: unknown[] }> {
    const ran: unknown[] = [];
    const registry = new ToolRegistry();
    registry.register({ name: 'search', parameters, execute: (a) => (ran.push(a), 'ran') });
    const [result] = await registry.dispatch([{ id: 'h', name: 'search', arguments: args }]);
    return { result: result!, ran };
  }

  it('prototype-polluting JSON is refused (a tool that merges it would be polluted) and pollutes nothing', async () => {
    const text = '{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}, "q": "x"}';
    for (const parameters of [
      { type: 'object', properties: { q: { type: 'string' } } },
      z.object({ q: z.string() }),
      z.looseObject({ q: z.string() }),
    ]) {
      const { result, ran } = await run(text, parameters);
      expect(result.status).toBe('refused');
      expect(result.decision.by).toBe('invalid_arguments');
      expect(result.decision.reason).toMatch(/"__proto__" key/);
      expect(ran).toEqual([]);
      assertClean();
    }
    // Without the key, the same arguments run.
    const plain = await run('{"constructor": {"prototype": {"polluted": true}}, "q": "x"}', {
      type: 'object',
      properties: { q: { type: 'string' } },
    });
    expect(plain.result.status).toBe('ok');
    assertClean();
    // A schema that forbids extra keys refuses the same arguments.
    const strict = await run(text, {
      type: 'object',
      properties: { q: { type: 'string' } },
      additionalProperties: false,
    });
    expect(strict.result.status).toBe('refused');
    expect(strict.result.decision.by).toBe('invalid_arguments');
    expect(strict.ran).toEqual([]);
  });

  it('arguments that are not a JSON object are refused, never run as {}', async () => {
    for (const args of ['{"q": ', 'null', '[]', '"q"', '42', 'true', [], 42, 'x'.repeat(MB)]) {
      const { result, ran } = await run(args);
      expect(result.status, String(args).slice(0, 20)).toBe('refused');
      expect(result.decision.stage).toBe('arguments');
      expect(result.content.length).toBeLessThan(2_000);
      expect(ran).toEqual([]);
    }
  });

  it('deeply nested arguments (100,000 levels) get a clear result, no stack overflow', async () => {
    const depth = 100_000;
    const text = `{"q": "x", "deep": ${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const { result } = await run(text);
    expect(['ok', 'refused']).toContain(result.status);
    // Built as a value, not text: the same.
    let nested: unknown = {};
    for (let i = 0; i < depth; i++) nested = { nested };
    const asValue = await run({ q: 'x', nested });
    expect(['ok', 'refused']).toContain(asValue.result.status);
    // A schema that walks the value refuses it or accepts it; it does not crash the dispatch.
    const walked = await run({ q: 'x', nested }, z.object({ q: z.string(), nested: z.unknown() }));
    expect(['ok', 'refused']).toContain(walked.result.status);
  });

  it('huge arguments (10 MB, 200,000 keys) get a clear, bounded result', async () => {
    const many: Record<string, string> = { q: 'x' };
    for (let i = 0; i < 200_000; i++) many[`k${i}`] = 'v';
    const strict = await run(many, {
      type: 'object',
      properties: { q: { type: 'string' } },
      additionalProperties: false,
    });
    expect(strict.result.status).toBe('refused');
    expect(strict.ran).toEqual([]);
    expect(strict.result.content.length).toBeLessThan(10_000);
    const big = await run(JSON.stringify({ q: 'x'.repeat(10 * MB) }));
    expect(big.result.status).toBe('ok');
  });

  it('arguments whose getters throw are refused at validation, not run', async () => {
    const trap = {
      get q(): string {
        throw new Error('getter trap');
      },
    };
    const { result, ran } = await run(trap);
    expect(result.status).toBe('refused');
    expect(result.decision.stage).toBe('validation');
    expect(ran).toEqual([]);
    const proxy = new Proxy(
      {},
      {
        get: () => {
          throw new Error('proxy trap');
        },
        ownKeys: () => {
          throw new Error('proxy trap');
        },
      },
    );
    const proxied = await run(proxy, z.object({ q: z.string() }));
    expect(proxied.result.status).toBe('refused');
    expect(proxied.ran).toEqual([]);
  });
});
