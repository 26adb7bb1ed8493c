import { describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  isToolgateError,
  ToolAllowlist,
  ToolAllowlistGuard,
  ToolNotPermittedError,
} from '../../src/index.js';

const declared = ['search', 'refund', 'Lookup'];

describe('ToolAllowlist.resolve', () => {
  it('intersects the three layers', () => {
    const list = ToolAllowlist.resolve(declared, {
      tenant: ['search', 'lookup', 'refund'],
      caller: ['SEARCH', 'lookup'],
      agent: 'concierge',
    });
    expect(list.names).toEqual(['search', 'Lookup']);
    expect(list.agent).toBe('concierge');
  });

  it('treats null and undefined as stating nothing, and an empty layer as refusing everything', () => {
    expect(ToolAllowlist.resolve(declared, { tenant: null, caller: undefined }).names).toEqual(declared);
    expect(ToolAllowlist.resolve(declared).names).toEqual(declared);
    expect(ToolAllowlist.resolve(declared, { tenant: [] }).names).toEqual([]);
    expect(ToolAllowlist.resolve(declared, { caller: new Set<string>() }).names).toEqual([]);
  });

  it('accepts an empty declaration, which permits nothing', () => {
    const list = ToolAllowlist.resolve([]);
    expect(list.names).toEqual([]);
    expect(list.decide('search')).toEqual({ tool: 'search', permitted: false, reason: 'not_declared' });
  });

  it('keeps declared spelling and order, and is immutable', () => {
    const list = ToolAllowlist.resolve(['Zeta', 'alpha', 'Mid']);
    expect(list.names).toEqual(['Zeta', 'alpha', 'Mid']);
    expect(Object.isFrozen(list.names)).toBe(true);
    expect(Object.isFrozen(list)).toBe(true);
    expect(() => (list.names as string[]).push('x')).toThrow(TypeError);
  });

  it('permits any spelling with the same canonical form', () => {
    const list = ToolAllowlist.resolve(['search']);
    expect(list.permits('Search')).toBe(true);
    expect(list.permits('ｓｅａｒｃｈ')).toBe(true);
    expect(list.permits(' SEARCH ')).toBe(true);
  });

  it('refuses two declared names that collapse, quoting both', () => {
    expect(() => ToolAllowlist.resolve(['search', 'ＳＥＡＲＣＨ'])).toThrow(ConfigurationError);
    expect(() => ToolAllowlist.resolve(['Straße', 'STRASSE'])).toThrow(/"Straße" and "STRASSE"/);
  });

  it('reads a repeated spelling as one name at its first position, whatever order the layers take', () => {
    const list = ToolAllowlist.resolve(['search', 'refund', 'search', 'lookup'], {
      tenant: ['refund', 'search', 'lookup'],
      caller: ['search', 'lookup', 'refund'],
    });
    expect(list.names).toEqual(['search', 'refund', 'lookup']);
    const cut = ToolAllowlist.resolve(['search', 'refund', 'search', 'lookup'], { tenant: ['search', 'lookup'] });
    expect(cut.names).toEqual(['search', 'lookup']);
    expect(cut.decide('refund').reason).toBe('tenant');
  });

  it('marks layer entries in and out of declaration order, in any spelling', () => {
    const names = Array.from({ length: 50 }, (_, i) => `tool_${i}`);
    const tenant = [...names.filter((_, i) => i % 3 !== 0).reverse(), 'TOOL_3', 'unknown'];
    const caller = names.filter((_, i) => i % 5 !== 0).map((n, i) => (i % 4 === 0 ? n.toUpperCase() : n));
    const list = ToolAllowlist.resolve(names, { tenant, caller });
    for (const [i, name] of names.entries())
      expect([name, list.decide(name).reason]).toEqual([
        name,
        i % 3 === 0 && i !== 3 ? 'tenant' : i % 5 === 0 ? 'caller' : null,
      ]);
  });

  it('refuses a collision even after a repetition of the first spelling', () => {
    expect(() => ToolAllowlist.resolve(['search', 'search', 'Search'])).toThrow(/"search" and "Search"/);
  });

  it('keeps namespaced names apart: neither grants the other', () => {
    const list = ToolAllowlist.resolve(['mcp:search', 'search'], { tenant: ['mcp:search'] });
    expect(list.names).toEqual(['mcp:search']);
    expect(list.decide('search').reason).toBe('tenant');
    expect(ToolAllowlist.resolve(['search']).decide('mcp:search').reason).toBe('not_declared');
    expect(ToolAllowlist.resolve(['mcp:search'], { caller: ['search'] }).decide('mcp:search').reason).toBe('caller');
  });

  it('rejects a layer that is not an iterable of names', () => {
    expect(() => ToolAllowlist.resolve(declared, { tenant: 'search' as unknown as string[] })).toThrow(
      ConfigurationError,
    );
    expect(() => ToolAllowlist.resolve(declared, { caller: [1] as unknown as string[] })).toThrow(/caller layer/);
    expect(() => ToolAllowlist.resolve(declared, { agent: '' })).toThrow(TypeError);
  });
});

describe('decide and check', () => {
  const list = ToolAllowlist.resolve(declared, {
    tenant: ['search', 'lookup'],
    caller: ['search'],
    agent: 'concierge',
  });

  it('names the layer, and the tenant where tenant and caller both cut', () => {
    expect(list.decide('Search')).toEqual({ tool: 'Search', permitted: true, reason: null });
    expect(list.decide('refund')).toEqual({ tool: 'refund', permitted: false, reason: 'tenant' });
    expect(list.decide('lookup')).toEqual({ tool: 'lookup', permitted: false, reason: 'caller' });
    expect(list.decide('delete')).toEqual({ tool: 'delete', permitted: false, reason: 'not_declared' });
  });

  it('throws ToolNotPermittedError with the tool as asked, the agent, the layer and what is permitted', () => {
    let caught: unknown;
    try {
      list.check('REFUND');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ToolNotPermittedError);
    const error = caught as ToolNotPermittedError;
    expect(isToolgateError(error)).toBe(true);
    expect(error.tool).toBe('REFUND');
    expect(error.agent).toBe('concierge');
    expect(error.reason).toBe('tenant');
    expect(error.permitted).toEqual(['search']);
    expect(error.details).toEqual({ tool: 'REFUND', agent: 'concierge', reason: 'tenant' });
    expect(error.message).toContain('"REFUND"');
    expect(error.message).toContain('"concierge"');
    expect(error.message).toContain('"search"');
    expect(error.code).toBe('ERR_TOOLGATE_TOOL_NOT_PERMITTED');
    expect(() => list.check('search')).not.toThrow();
  });

  it('agrees between permits, decide and check', () => {
    for (const name of ['search', 'refund', 'lookup', 'nothing', 'SEARCH']) {
      const permitted = list.permits(name);
      expect(list.decide(name).permitted).toBe(permitted);
      if (permitted) expect(() => list.check(name)).not.toThrow();
      else expect(() => list.check(name)).toThrow(ToolNotPermittedError);
    }
  });
});

describe('narrowed', () => {
  const parent = ToolAllowlist.resolve(['search', 'refund', 'lookup'], {
    tenant: ['search', 'lookup'],
    caller: ['search', 'refund'],
    agent: 'concierge',
  });

  it('holds a broader peer to the intersection', () => {
    const peer = parent.narrowed(['search', 'lookup', 'refund', 'pricing'], { agent: 'pricing' });
    expect(peer.agent).toBe('pricing');
    expect(peer.names).toEqual(['search']);
  });

  it("refuses names the parent lacks as caller and keeps the parent's reason for names it cut", () => {
    const peer = parent.narrowed(['search', 'lookup', 'refund', 'pricing'], { agent: 'pricing' });
    expect(peer.decide('pricing').reason).toBe('caller');
    expect(peer.decide('refund').reason).toBe('tenant');
    expect(peer.decide('lookup').reason).toBe('caller');
    expect(peer.decide('other').reason).toBe('not_declared');
  });

  it('only shrinks along a chain', () => {
    const a = parent.narrowed(['search', 'lookup']);
    const b = a.narrowed(['search', 'lookup', 'refund']);
    const c = b.narrowed(['lookup', 'search']);
    for (const list of [a, b, c]) for (const name of list.names) expect(parent.permits(name)).toBe(true);
    expect(c.names).toEqual(['search']);
  });

  it('refuses a colliding peer declaration', () => {
    expect(() => parent.narrowed(['search', 'Search'])).toThrow(ConfigurationError);
  });
});

describe('ToolAllowlistGuard', () => {
  it('counts every decide and check, and a refused check once', () => {
    const guard = ToolAllowlistGuard.resolving(['search', 'refund'], { tenant: ['search'] });
    expect(guard.name).toBe('tool_allowlist');
    guard.decide('search');
    guard.decide('refund');
    expect(() => guard.check('refund')).toThrow(ToolNotPermittedError);
    guard.check('search');
    expect(guard.attempts).toBe(4);
    expect(guard.refusals).toBe(2);
  });

  it('filters permitted names in order without counting', () => {
    const guard = ToolAllowlistGuard.resolving(['search', 'refund', 'lookup'], { caller: ['lookup', 'search'] });
    expect(guard.permitted(['refund', 'lookup', 'search', 'x'])).toEqual(['lookup', 'search']);
    expect(guard.attempts).toBe(0);
    expect(guard.refusals).toBe(0);
  });

  it('delegates with narrowed permissions and fresh counters', () => {
    const guard = ToolAllowlistGuard.resolving(['search', 'refund'], { tenant: ['search'] });
    guard.decide('refund');
    const peer = guard.delegating(['search', 'refund', 'extra'], { agent: 'peer' });
    expect(peer.attempts).toBe(0);
    expect(peer.allowlist.names).toEqual(['search']);
    expect(peer.decide('extra').reason).toBe('caller');
    expect(peer.refusals).toBe(1);
    expect(guard.attempts).toBe(1);
  });
});
