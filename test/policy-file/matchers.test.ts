import { describe, expect, it } from 'vitest';
import { parsePolicy, resolvePath } from '../../src/policy-file/index.js';

describe('resolvePath', () => {
  it('resolves . and .. the POSIX way', () => {
    expect(resolvePath('/data/../etc/passwd')).toEqual({ ok: true, path: '/etc/passwd' });
    expect(resolvePath('/data/./a//b/')).toEqual({ ok: true, path: '/data/a/b' });
    expect(resolvePath('a/b/../c')).toEqual({ ok: true, path: 'a/c' });
    expect(resolvePath('/')).toEqual({ ok: true, path: '/' });
    expect(resolvePath('a/..')).toEqual({ ok: true, path: '.' });
  });

  it.each([
    ['/../etc/passwd', /climbs above the root/],
    ['/data/../../etc', /climbs above the root/],
    ['../secret', /climbs above its starting directory/],
    ['/data/file\u0000.txt', /control character/],
    ['/data\\..\\etc', /backslash/],
    ['/data/%2e%2e/etc/passwd', /percent-escape/],
    ['~/.ssh/id_rsa', /starts with ~/],
    ['', /empty/],
  ])('refuses %j as unjudgeable', (input, problem) => {
    const result = resolvePath(input);
    expect(result.ok).toBe(false);
    expect(result.problem).toMatch(problem);
  });

  it('refuses values that are not strings', () => {
    for (const value of [42, null, ['/data/x'], { path: '/data/x' }]) expect(resolvePath(value).ok).toBe(false);
  });
});

function policy(rules: string, tools = 't: {}') {
  const result = parsePolicy(`version: 1\nfallback: deny\ntools:\n  ${tools}\nrules:\n${rules}`);
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.policy;
}

async function decide(set: ReturnType<typeof policy>, args: Record<string, unknown>, tool = 't') {
  return set.registry().decide({ name: tool, arguments: args });
}

describe('conditions', () => {
  it('path: a traversal out of an allowed tree is not allowed, and an unjudgeable path is denied', async () => {
    const set = policy('  - { name: data, result: allow, tools: t, when: { file: { path: "/data/**" } } }\n');
    expect((await decide(set, { file: '/data/reports/q1.csv' })).effect).toBe('allow');
    expect((await decide(set, { file: '/data/.env' })).effect).toBe('allow');
    const traversal = await decide(set, { file: '/data/../etc/passwd' });
    expect(traversal).toMatchObject({ effect: 'deny', by: 'fallback' });
    const escape = await decide(set, { file: '/data/../../etc/passwd' });
    expect(escape).toMatchObject({ effect: 'deny', by: 'rule_error', rule: 'data' });
    expect(escape.reason).toMatch(/climbs above the root; the call cannot be judged safely/);
    for (const file of ['/data/%2e%2e/etc/passwd', '/data\\..\\etc', '/data/x\u0000', 7]) {
      expect((await decide(set, { file })).by).toBe('rule_error');
    }
    // Absent: the condition does not hold (use exists to require it).
    expect((await decide(set, {})).by).toBe('fallback');
  });

  it('path: a deny rule catches hidden files and traversals into its tree', async () => {
    const set = policy(
      '  - { name: no_home, result: deny, tools: t, when: { p: { path: ["/home/**", "/root/**"] } } }\n  - { name: rest, result: allow, tools: t }\n',
    );
    expect((await decide(set, { p: '/home/ann/.ssh/id_rsa' })).rule).toBe('no_home');
    expect((await decide(set, { p: '/tmp/../home/ann/x' })).rule).toBe('no_home');
    expect((await decide(set, { p: '/root' })).rule).toBe('no_home');
    expect((await decide(set, { p: '/tmp/x' })).rule).toBe('rest');
    expect((await decide(set, { p: '/../home/ann' })).by).toBe('rule_error');
  });

  it('equals and oneOf compare JSON values deeply', async () => {
    const set = policy(
      '  - { name: r, result: allow, tools: t, when: { mode: { equals: { a: [1, 2] } }, kind: { oneOf: [x, 2, null] } } }\n',
    );
    expect((await decide(set, { mode: { a: [1, 2] }, kind: null })).effect).toBe('allow');
    expect((await decide(set, { mode: { a: [1, 2] }, kind: 2 })).effect).toBe('allow');
    expect((await decide(set, { mode: { a: [2, 1] }, kind: 'x' })).effect).toBe('deny');
    expect((await decide(set, { mode: { a: [1, 2] }, kind: 'y' })).effect).toBe('deny');
  });

  it('prefix and glob test strings; a non-string denies', async () => {
    const set = policy(
      '  - { name: r, result: allow, tools: t, when: { url: { prefix: "https://" }, host: { glob: "*.example.com" } } }\n',
    );
    expect((await decide(set, { url: 'https://x', host: 'api.example.com' })).effect).toBe('allow');
    expect((await decide(set, { url: 'http://x', host: 'api.example.com' })).by).toBe('fallback');
    expect((await decide(set, { url: 'https://x', host: 'example.org' })).by).toBe('fallback');
    expect((await decide(set, { url: 5, host: 'api.example.com' })).by).toBe('rule_error');
  });

  it('numeric comparisons; a non-number denies whatever the rule says', async () => {
    const set = policy('  - { name: small, result: allow, tools: t, when: { amount: { gte: 0, lt: 100 } } }\n');
    expect((await decide(set, { amount: 0 })).effect).toBe('allow');
    expect((await decide(set, { amount: 99.5 })).effect).toBe('allow');
    expect((await decide(set, { amount: 100 })).by).toBe('fallback');
    expect((await decide(set, { amount: -1 })).by).toBe('fallback');
    expect((await decide(set, { amount: '50' })).by).toBe('rule_error');
  });

  it('exists, and nested arguments through own properties only', async () => {
    const set = policy(
      '  - { name: r, result: allow, tools: t, when: { opts.force: { exists: false }, opts.mode: { equals: safe } } }\n',
    );
    expect((await decide(set, { opts: { mode: 'safe' } })).effect).toBe('allow');
    expect((await decide(set, { opts: { mode: 'safe', force: true } })).by).toBe('fallback');
    expect((await decide(set, { opts: 'safe' })).by).toBe('fallback');
    expect((await decide(set, { opts: Object.create({ mode: 'safe' }) as object })).by).toBe('fallback');
  });

  it('path: a deny rule on the root "/" catches the root however it is spelled', async () => {
    const set = policy(
      '  - { name: no_root, result: deny, tools: t, when: { p: { path: "/" } } }\n  - { name: rest, result: allow, tools: t }\n',
    );
    for (const p of ['/', '//', '/.', '/a/..', '/tmp/../']) expect((await decide(set, { p })).rule).toBe('no_root');
    expect((await decide(set, { p: '/tmp' })).rule).toBe('rest');
  });

  it('name globs never match across names that merely look alike', async () => {
    const set = policy('  - { name: r, result: allow, tools: "read_*" }\n', 'read_file: {}\n  "rеad_file": {}');
    expect((await decide(set, {}, 'READ_FILE')).effect).toBe('allow');
    expect((await decide(set, {}, 'r\u0435ad_file')).effect).toBe('deny');
  });
});

describe('path conditions fail closed on what they cannot place', () => {
  it('refuses URLs and drives, and relative paths against absolute patterns', async () => {
    expect(resolvePath('file:///etc/passwd').problem).toMatch(/starts like a URL or drive \(file:\)/);
    expect(resolvePath('C:/Windows').ok).toBe(false);
    const set = policy(
      '  - { name: no_etc, result: deny, tools: t, when: { p: { path: "/etc/**" } } }\n  - { name: rest, result: allow, tools: t }\n',
    );
    expect((await decide(set, { p: 'etc/passwd' })).by).toBe('rule_error');
    expect((await decide(set, { p: 'file:///etc/passwd' })).by).toBe('rule_error');
    expect((await decide(set, { p: '/srv/x' })).rule).toBe('rest');
    const rel = policy(
      '  - { name: src, result: allow, tools: t, when: { p: { path: ["src/**", "/repo/src/**"] } } }\n',
    );
    expect((await decide(rel, { p: 'src/a/../b.ts' })).effect).toBe('allow');
    expect((await decide(rel, { p: '/repo/src/b.ts' })).effect).toBe('allow');
    expect((await decide(rel, { p: 'lib/b.ts' })).by).toBe('fallback');
  });

  it('looks for glob syntax after canonicalisation', async () => {
    const set = policy(
      '  - { name: r, result: deny, tools: "ＭＣＰ：＊" }\n  - { name: rest, result: allow, tools: "**" }\n',
      '"mcp:a": {}\n  b: {}',
    );
    expect((await decide(set, {}, 'mcp:a')).rule).toBe('r');
    expect((await decide(set, {}, 'b')).rule).toBe('rest');
  });
});
