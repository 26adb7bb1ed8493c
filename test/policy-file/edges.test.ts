/**
 * Issue 11, conditions at the edges: globs in time linear in the input, paths that name one file by
 * many spellings (Unicode normalisation, case, Windows trailing dots), symbolic links (`realpath`), the
 * folder of a `dir/**` pattern, and `__proto__` argument keys.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileGlobMatcher, globSteps, MAX_EXPANSIONS } from '../../src/policy-file/glob.js';
import { parsePolicy, resolvePath } from '../../src/policy-file/index.js';
import { ToolRegistry } from '../../src/index.js';
import { tempDir } from '../harness.js';

function policy(rules: string, tools = 't: {}') {
  const result = parsePolicy(`version: 1\nfallback: deny\ntools:\n  ${tools}\nrules:\n${rules}`);
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.policy;
}

async function decide(set: ReturnType<typeof policy>, args: Record<string, unknown>, tool = 't') {
  return set.registry().decide({ name: tool, arguments: args });
}

/** The automaton steps one call of `fn` takes. */
function stepsOf(fn: () => unknown): number {
  const before = globSteps();
  fn();
  return globSteps() - before;
}

describe('globs run in time linear in the input (no backtracking)', () => {
  const N = 100_000;

  it('/logs/*-*-*-*.log against 100,000 dashes: O(input × pattern) steps, not the seconds a backtracking regex takes', () => {
    const glob = compileGlobMatcher('/logs/*-*-*-*.log');
    const input = `/logs/${'-'.repeat(N)}x`;
    let result = true;
    const steps = stepsOf(() => (result = glob.test(input)));
    expect(result).toBe(false);
    // 8 tokens in the segment: at most 9 live states per character.
    expect(steps).toBeLessThanOrEqual(9 * (N + 10));
    // Doubling the input doubles the work (linear), it does not square it.
    const twice = stepsOf(() => glob.test(`/logs/${'-'.repeat(2 * N)}x`));
    expect(twice).toBeLessThanOrEqual(2.1 * steps);
    expect(glob.test('/logs/2026-12-01-x.log')).toBe(true);
  });

  it('/data/**/x/**/y/**/z against a 50,000-segment path', () => {
    const glob = compileGlobMatcher('/data/**/x/**/y/**/z');
    const input = `/data/${'x/y/'.repeat(25_000)}q`;
    let result = true;
    const steps = stepsOf(() => (result = glob.test(input)));
    expect(result).toBe(false);
    expect(steps).toBeLessThanOrEqual(20 * 50_002);
    expect(glob.test('/data/a/x/b/y/c/z')).toBe(true);
    expect(glob.test('/data/x/y/z')).toBe(true);
  });

  it('name globs and argument globs alike, through a policy decision', async () => {
    const names = compileGlobMatcher('*a*a*a*a*a*a*b', { names: true });
    expect(stepsOf(() => expect(names.test('a'.repeat(N))).toBe(false))).toBeLessThanOrEqual(14 * N + 100);
    const set = policy(
      '  - { name: logs, result: allow, tools: "t*", when: { file: { glob: "/logs/*-*-*-*.log" }, p: { path: "/data/**/x/**/y/**/z" } } }\n',
    );
    const before = globSteps();
    const decision = await decide(set, { file: `/logs/${'-'.repeat(N)}x`, p: '/data/x/y/z' });
    expect(decision).toMatchObject({ effect: 'deny', by: 'fallback' });
    const path = await decide(set, { file: '/logs/a-b-c-d.log', p: `/data/${'x/y/'.repeat(20_000)}q` });
    expect(path).toMatchObject({ effect: 'deny', by: 'fallback' });
    expect(globSteps() - before).toBeLessThanOrEqual(9 * (N + 10) + 20 * 40_010 + 1_000);
  });

  it('keeps the glob syntax policy files use', () => {
    const t = (pattern: string, input: string, names = false) => compileGlobMatcher(pattern, { names }).test(input);
    expect(t('/home/**', '/home/ann/.ssh/id_rsa')).toBe(true);
    expect(t('/r/*', '/r/.env')).toBe(true);
    expect(t('/r/*', '/r/a/b')).toBe(false);
    expect(t('/r/**/x', '/r/x')).toBe(true);
    expect(t('a/{b,c}/d', 'a/c/d')).toBe(true);
    expect(t('a/{1..3}', 'a/2')).toBe(true);
    expect(t('a/{1..3}', 'a/4')).toBe(false);
    expect(t('[a-c]x', 'bx')).toBe(true);
    expect(t('[!a-c]x', 'bx')).toBe(false);
    expect(t('a\\*', 'a*')).toBe(true);
    expect(t('a\\*', 'ab')).toBe(false);
    expect(t('?', '/')).toBe(false);
    expect(t('/data/**', '/data/../etc')).toBe(false);
    expect(t('github:*', 'github:repos/delete', true)).toBe(true);
    expect(t('read_?', 'read_/', true)).toBe(true);
    expect(() => compileGlobMatcher('[[:alpha:]]')).toThrow(/POSIX character classes/);
    expect(() => compileGlobMatcher('{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}')).toThrow(
      new RegExp(`more than ${MAX_EXPANSIONS}`),
    );
  });
});

describe('a dir/** pattern covers the folder’s contents, and leaves the folder itself unjudgeable', () => {
  it('write_file on inbox (the folder) is refused by an allow on inbox/**; listing it too needs the folder listed', async () => {
    const set = policy('  - { name: inbox, result: allow, tools: t, when: { path: { path: "/srv/inbox/**" } } }\n');
    expect((await decide(set, { path: '/srv/inbox/a.txt' })).effect).toBe('allow');
    for (const path of ['/srv/inbox', '/srv/inbox/', '/srv/inbox/.', '/srv/inbox/a/..']) {
      const decision = await decide(set, { path });
      expect(decision).toMatchObject({ effect: 'deny', by: 'rule_error', rule: 'inbox' });
      expect(decision.reason).toMatch(/is the folder whose contents "\/srv\/inbox\/\*\*" covers/);
    }
    const both = policy(
      '  - { name: inbox, result: allow, tools: t, when: { path: { path: ["/srv/inbox", "/srv/inbox/**"] } } }\n',
    );
    expect((await decide(both, { path: '/srv/inbox' })).effect).toBe('allow');
  });

  it('a deny on secret/** still refuses secret itself', async () => {
    const set = policy(
      '  - { name: no-secret, result: deny, tools: t, when: { path: { path: "/srv/secret/**" } } }\n  - { name: rest, result: allow, tools: t }\n',
    );
    expect(await decide(set, { path: '/srv/secret' })).toMatchObject({ effect: 'deny', rule: 'no-secret' });
    expect(await decide(set, { path: '/srv/secretive' })).toMatchObject({ effect: 'allow', rule: 'rest' });
  });
});

describe('path conditions and names that are one file to the upstream', () => {
  const rules =
    '  - { name: no-keys, result: deny, tools: t, when: { path: { path: ["/srv/Keys/**", "/srv/Gehälter/**"] } } }\n  - { name: rest, result: allow, tools: t }\n';

  it('normalises both sides to NFC: KELVIN SIGN and NFD spellings do not slip a deny', async () => {
    const set = policy(rules);
    expect((await decide(set, { path: '/srv/\u212Aeys/id_rsa' })).rule).toBe('no-keys');
    expect((await decide(set, { path: '/srv/Geha\u0308lter/2026.csv' })).rule).toBe('no-keys');
    // A pattern written in NFD matches the NFC spelling too.
    const nfd = policy(rules.normalize('NFD'));
    expect((await decide(nfd, { path: '/srv/Gehälter/2026.csv' })).rule).toBe('no-keys');
    expect(resolvePath('/srv/Geha\u0308lter')).toEqual({ ok: true, path: '/srv/Gehälter' });
  });

  it('compares case-sensitively unless a condition says caseInsensitive (macOS and Windows upstreams)', async () => {
    expect((await decide(policy(rules), { path: '/srv/KEYS/id_rsa' })).rule).toBe('rest');
    const folded = policy(
      '  - { name: no-keys, result: deny, tools: t, when: { path: { path: "/srv/Keys/**", caseInsensitive: true } } }\n  - { name: rest, result: allow, tools: t }\n',
    );
    for (const path of ['/srv/KEYS/id_rsa', '/srv/keys/id_rsa', '/srv/\u212Aeys/id_rsa', '/SRV/kEyS/x'])
      expect((await decide(folded, { path })).rule).toBe('no-keys');
    const glob = policy(
      '  - { name: no-exe, result: deny, tools: t, when: { file: { glob: "*.EXE", caseInsensitive: true } } }\n  - { name: rest, result: allow, tools: t }\n',
    );
    expect((await decide(glob, { file: 'setup.exe' })).rule).toBe('no-exe');
  });

  it('refuses segments ending in a dot or a space (Windows opens "Keys." and "Keys " as "Keys")', async () => {
    const set = policy(rules);
    for (const path of ['/srv/Keys./id_rsa', '/srv/Keys /id_rsa', '/srv/Keys/id_rsa.', '/srv/.../x']) {
      const decision = await decide(set, { path });
      expect(decision).toMatchObject({ effect: 'deny', by: 'rule_error' });
      expect(decision.reason).toMatch(/ending in a dot or a space/);
    }
  });

  it('refuses modifiers without a test to modify, at load time', () => {
    const bad = parsePolicy(
      'version: 1\nrules:\n  - { name: r, result: allow, when: { p: { caseInsensitive: true } } }\n  - { name: s, result: allow, when: { p: { glob: "*", realpath: true } } }\n',
    );
    expect(bad.ok).toBe(false);
    expect(bad.issues?.map((i) => i.message)).toEqual([
      expect.stringMatching(/caseInsensitive applies to a path or glob test/),
      expect.stringMatching(/realpath applies to a path test/),
    ]);
  });
});

describe('realpath: symbolic links resolved on this machine before matching', () => {
  function tree() {
    const root = tempDir('links');
    mkdirSync(join(root, 'secret'));
    mkdirSync(join(root, 'inbox'));
    writeFileSync(join(root, 'secret', 'key.txt'), 'k');
    symlinkSync(join(root, 'secret'), join(root, 'inbox', 'drop'));
    symlinkSync(join(root, 'loop-a'), join(root, 'loop-b'));
    symlinkSync(join(root, 'loop-b'), join(root, 'loop-a'));
    return root;
  }
  const rules = (root: string, realpath: boolean) =>
    policy(
      `  - { name: no-secret, result: deny, tools: t, when: { path: { path: ["${root}/secret", "${root}/secret/**"], realpath: ${realpath} } } }\n` +
        `  - { name: inbox, result: allow, tools: t, when: { path: { path: "${root}/inbox/**", realpath: ${realpath} } } }\n`,
    );

  it('a link from the inbox into the secret folder: read and write through it are refused', async () => {
    const root = tree();
    const lexical = rules(root, false);
    // Lexically (the default), the link is just a name in the inbox: what the docs warn about.
    expect((await decide(lexical, { path: `${root}/inbox/drop/key.txt` })).rule).toBe('inbox');
    const real = rules(root, true);
    expect((await decide(real, { path: `${root}/inbox/drop/key.txt` })).rule).toBe('no-secret');
    expect((await decide(real, { path: `${root}/inbox/drop/planted.txt` })).rule).toBe('no-secret');
    expect((await decide(real, { path: `${root}/inbox/drop` })).rule).toBe('no-secret');
    expect((await decide(real, { path: `${root}/inbox/new/file.txt` })).rule).toBe('inbox');
  });

  it('refuses what cannot be resolved: loops, relative paths, and ".." after a link', async () => {
    const root = tree();
    const real = rules(root, true);
    const loop = await decide(real, { path: `${root}/loop-a/x` });
    expect(loop).toMatchObject({ effect: 'deny', by: 'rule_error' });
    expect(loop.reason).toMatch(/cannot be resolved \(ELOOP\)/);
    expect((await decide(real, { path: 'inbox/x' })).reason).toMatch(/realpath needs an absolute path/);
    // The kernel climbs out of the link's target (root/), a lexical tool out of the link's folder (inbox/).
    const dotdot = await decide(real, { path: `${root}/inbox/drop/../x.txt` });
    expect(dotdot).toMatchObject({ effect: 'deny', by: 'rule_error' });
    expect(dotdot.reason).toMatch(/".." after a symbolic link/);
    expect((await decide(real, { path: `${root}/inbox/sub/../x.txt` })).rule).toBe('inbox');
  });
});

describe('__proto__ argument keys are refused at the gate (when the arguments are read)', () => {
  it('at any depth, from JSON text or objects, before any rule or tool sees them', async () => {
    const registry = new ToolRegistry();
    const ran: unknown[] = [];
    registry.register({ name: 't', parameters: { type: 'object' }, execute: (args) => ran.push(args) });
    for (const args of [
      '{"__proto__": {"admin": true}}',
      '{"options": {"deep": [{"__proto__": {"admin": true}}]}}',
      JSON.parse('{"a": {"__proto__": {"admin": true}}}') as Record<string, unknown>,
    ]) {
      const [result] = await registry.dispatch([{ id: 'c', name: 't', arguments: args }], {});
      expect(result).toMatchObject({ status: 'refused' });
      expect(result!.decision).toMatchObject({ stage: 'validation', by: 'invalid_arguments' });
      expect(result!.decision.reason).toMatch(/"__proto__" key \((at the top level|inside "0"|inside "a")\)/);
    }
    const [ok] = await registry.dispatch([{ id: 'd', name: 't', arguments: { constructor: { name: 'x' } } }], {});
    expect(ok).toMatchObject({ status: 'ok' });
    expect(ran).toHaveLength(1);
  });
});
