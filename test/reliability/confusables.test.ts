/**
 * Confusable names (UTS #39 skeletons): reported at registration and, when asked, at resolution; never per
 * call or per dispatch (issue 12: a declaration-time check).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ConfigurationError,
  CONFUSABLES_VERSION,
  findConfusables,
  skeleton,
  ToolAllowlist,
  ToolRegistry,
} from '../../src/index.js';

const LATIN = 'search';
const CYRILLIC = 'se\u0430rch'; // U+0430 CYRILLIC SMALL LETTER A

function tool(name: string) {
  return { name, parameters: { type: 'object' }, execute: () => 'ran' };
}

function captureWarnings(): { warnings: string[]; restore: () => void } {
  const warnings: string[] = [];
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(((
    message: string | Error,
    options?: { code?: string },
  ) => {
    if (typeof options === 'object' && options.code === 'TOOLGATE_CONFUSABLE_NAMES') warnings.push(String(message));
  }) as typeof process.emitWarning);
  return { warnings, restore: () => spy.mockRestore() };
}

describe('skeleton()', () => {
  it('maps look-alikes to one skeleton, per confusables.txt', () => {
    expect(CONFUSABLES_VERSION).toMatch(/^\d+\.\d+\.\d+$/);
    expect(skeleton(CYRILLIC)).toBe(skeleton(LATIN));
    expect(skeleton('раураl')).toBe(skeleton('paypal')); // all Cyrillic but the l
    expect(skeleton('paypa1')).toBe(skeleton('paypal'));
    expect(skeleton('modem')).toBe(skeleton('rnodern'));
    expect(skeleton('search')).not.toBe(skeleton('fetch'));
    // Default-ignorable code points are dropped before mapping (UTS #39 section 4).
    expect(skeleton('se\u00adarch')).toBe(skeleton('search'));
    expect(() => skeleton(1 as unknown as string)).toThrow(TypeError);
  });
});

describe('findConfusables()', () => {
  it('reports pairs with different canonical forms and equal skeletons, once each', () => {
    expect(findConfusables([LATIN, CYRILLIC, 'fetch'])).toEqual([
      { first: LATIN, second: CYRILLIC, skeleton: skeleton(LATIN) },
    ]);
    // Upper-case Cyrillic А against Latin a: caught through the canonical forms ("A" and "a" are one permission).
    expect(findConfusables(['\u0410pi', 'api'])).toHaveLength(1);
    // I (capital i) against l: caught through the spellings as written.
    expect(findConfusables(['list', 'Iist'])).toHaveLength(1);
    // One permission spelled two ways is a collision, not a confusable pair.
    expect(findConfusables(['Search', 'search', 'ｓｅａｒｃｈ'])).toEqual([]);
    expect(findConfusables(['mcp:search', 'search'])).toEqual([]);
    expect(findConfusables([LATIN, CYRILLIC, 'se\u0430r\u0441h'])).toHaveLength(2);
  });
});

describe('ToolAllowlist.resolve reports confusable declarations', () => {
  let capture: ReturnType<typeof captureWarnings> | undefined;
  afterEach(() => capture?.restore());

  it("'error' throws a ConfigurationError naming both names", () => {
    expect(() => ToolAllowlist.resolve([LATIN, CYRILLIC], { confusables: 'error' })).toThrow(ConfigurationError);
    expect(() => ToolAllowlist.resolve([LATIN, CYRILLIC], { confusables: 'error', agent: 'a1' })).toThrow(
      /agent "a1" declaration: tool names "search" and "seаrch" look alike/,
    );
    // The narrowed (delegation) path checks the peer's declaration too.
    const parent = ToolAllowlist.resolve([LATIN]);
    expect(() => parent.narrowed([LATIN, CYRILLIC], { confusables: 'error' })).toThrow(ConfigurationError);
  });

  it("'warn' resolves and warns once per pair; by default resolution does not check", () => {
    capture = captureWarnings();
    const names = [LATIN, CYRILLIC, 'fetch'];
    const list = ToolAllowlist.resolve(names, { agent: 'warn-default', confusables: 'warn' });
    ToolAllowlist.resolve(names, { agent: 'warn-default', confusables: 'warn' });
    expect(list.names).toEqual(names);
    expect(list.permits(CYRILLIC)).toBe(true);
    expect(capture.warnings).toHaveLength(1);
    expect(capture.warnings[0]).toContain('look alike');
    ToolAllowlist.resolve(names, { agent: 'unchecked' });
    expect(capture.warnings).toHaveLength(1);
  });

  it("'off' says nothing; a bad mode is a TypeError naming the option", () => {
    capture = captureWarnings();
    ToolAllowlist.resolve([LATIN, CYRILLIC], { confusables: 'off', agent: 'quiet' });
    expect(capture.warnings).toEqual([]);
    expect(() => ToolAllowlist.resolve([LATIN], { confusables: 'loud' as 'off' })).toThrow(/option "confusables"/);
  });

  it('never runs on decide/check: the hot path is untouched', () => {
    const list = ToolAllowlist.resolve([LATIN], { confusables: 'error' });
    capture = captureWarnings();
    expect(list.decide(CYRILLIC)).toEqual({ tool: CYRILLIC, permitted: false, reason: 'not_declared' });
    expect(list.permits(CYRILLIC)).toBe(false);
    expect(capture.warnings).toEqual([]);
  });
});

describe('ToolRegistry reports confusable registrations', () => {
  let capture: ReturnType<typeof captureWarnings> | undefined;
  afterEach(() => capture?.restore());

  it("'error' refuses the look-alike tool and keeps the first", async () => {
    const registry = new ToolRegistry({ confusables: 'error' });
    registry.register(tool(LATIN));
    expect(() => registry.register(tool(CYRILLIC))).toThrow(ConfigurationError);
    expect(registry.has(CYRILLIC)).toBe(false);
    expect(registry.list().map((t) => t.name)).toEqual([LATIN]);
    const result = await registry.invoke(CYRILLIC, {});
    expect(result.status).toBe('refused');
    expect(result.decision.by).toBe('unknown_tool');
  });

  it('is checked at register, not per dispatch: a declaration naming an unregistered look-alike only refuses it', async () => {
    capture = captureWarnings();
    const registry = new ToolRegistry({ confusables: 'error' });
    registry.register(tool(LATIN));
    const context = { agent: { name: 'x', tools: [LATIN, CYRILLIC] } };
    expect((await registry.invoke(LATIN, {}, context)).status).toBe('ok');
    const lookalike = await registry.invoke(CYRILLIC, {}, context);
    expect(lookalike.status).toBe('refused');
    expect(lookalike.decision.by).toBe('unknown_tool');
    expect(capture.warnings).toEqual([]);
  });

  it('checks each registration against the tools before it, also after an unregister', () => {
    const registry = new ToolRegistry({ confusables: 'error' });
    registry.register(tool('fetch'));
    registry.register(tool(LATIN));
    expect(() => registry.register(tool(CYRILLIC))).toThrow(/"search" and "seаrch" look alike/);
    registry.unregister(LATIN);
    registry.register(tool(CYRILLIC)); // its look-alike is gone
    expect(() => registry.register(tool(LATIN))).toThrow(/"seаrch" and "search" look alike/);
    expect(registry.list().map((t) => t.name)).toEqual(['fetch', CYRILLIC]);
  });

  it("'warn' (the default) registers both and warns", () => {
    capture = captureWarnings();
    const registry = new ToolRegistry();
    registry.register(tool('refund'));
    registry.register(tool('r\u0435fund')); // U+0435 CYRILLIC SMALL LETTER IE
    expect(registry.list()).toHaveLength(2);
    expect(capture.warnings.some((w) => w.includes('registering tool'))).toBe(true);
  });

  it('rejects a bad mode with a TypeError naming the option', () => {
    expect(() => new ToolRegistry({ confusables: 'yes' as 'off' })).toThrow(/option "confusables"/);
  });
});
