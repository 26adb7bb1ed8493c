import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, defineTool, PermissionPolicy, ToolRegistry, isToolgateError } from '../../src/index.js';
import {
  loadPolicyFile,
  parsePolicy,
  PolicyFileError,
  readPolicyFile,
  type PolicyIssue,
} from '../../src/policy-file/index.js';

const fixture = (name: string): string => join(import.meta.dirname, 'fixtures', name);

function issuesOf(text: string): readonly PolicyIssue[] {
  const result = parsePolicy(text, { file: 'p.yaml' });
  if (result.ok) throw new Error('expected the policy to be refused');
  return result.issues;
}

function load(text: string) {
  const result = parsePolicy(text, { file: 'p.yaml' });
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.policy;
}

describe('loading a policy file', () => {
  it('compiles the example to a PermissionPolicy with its agents, tenants and scopes', async () => {
    const set = await loadPolicyFile(fixture('concierge.yaml'));
    expect(set.policy).toBeInstanceOf(PermissionPolicy);
    expect(set.policy.fallback).toBe('deny');
    expect(set.policy.version).toMatch(/^policy-file-[0-9a-f]{12}$/);
    expect(set.rules.map((r) => r.name)).toEqual([
      'deny_privileged',
      'read_data_only',
      'deny_other_reads',
      'big_refunds_ask',
      'small_refunds',
      'github_reads',
    ]);
    expect(set.agent('concierge')).toEqual({
      name: 'concierge',
      tools: ['read_file', 'write_file', 'refund', 'github:search'],
      peers: [set.agent('researcher')],
    });
    // The runner's own Agent: peers are the file's agents themselves.
    expect(set.agent('concierge').peers[0]).toBe(set.agent('researcher'));
    expect(Object.isFrozen(set.agent('concierge').tools)).toBe(true);
    expect(set.tenantLimits('acme')).toEqual({
      tools: ['read_file', 'refund', 'github:search'],
      maxIterations: 20,
      maxToolCalls: 100,
      maxCost: 5,
    });
    expect(set.tenantLimits('globex')).toEqual({});
    expect(set.toolsForScopes(['files:read', 'payments', 'nope'])).toEqual(['read_file', 'refund']);
    // The same scope set gives the same frozen array, so the gate's allowlist cache is hit.
    expect(set.toolsForScopes(['payments', 'files:read'])).toBe(set.toolsForScopes(['files:read', 'payments']));
    expect(() => set.agent('nobody')).toThrow(ConfigurationError);
    expect(() => set.tenantLimits('nobody')).toThrow(/declared tenants: acme, globex/);
  });

  it('reads JSON with the same parser and reports positions in it', async () => {
    const result = await readPolicyFile(fixture('policy.json'));
    expect(result.ok).toBe(false);
    const [issue] = result.issues!;
    expect(issue).toMatchObject({ line: 6, column: 64, code: 'schema' });
    expect(issue!.message).toBe('rules[1].when.n.gt: expected number, got "ten"');
  });

  it('reports YAML syntax errors with line and column', () => {
    const [issue] = issuesOf('version: 1\nrules:\n  - name: a\n    result: [allow\n');
    expect(issue!.code).toBe('yaml');
    expect(issue!.file).toBe('p.yaml');
    expect(issue!.line).toBeGreaterThanOrEqual(4);
  });

  it('refuses duplicate keys', () => {
    const [issue] = issuesOf('version: 1\nfallback: deny\nfallback: allow\n');
    expect(issue).toMatchObject({ line: 3, column: 1, code: 'yaml' });
    expect(issue!.message).toMatch(/unique/);
  });

  it('says what was expected, at the offending key or value', async () => {
    const result = await readPolicyFile(fixture('broken.yaml'));
    expect(result.ok).toBe(false);
    expect(result.issues!.map((i) => [i.line, i.column, i.message])).toEqual([
      [7, 13, 'rules[0].result: expected one of "allow", "deny", "ask", got "permit"'],
      [
        11,
        5,
        'rules[1].tool: unknown property "tool"; expected one of name, result, reason, mode, tools, namespace, tags, when, risk',
      ],
    ]);
    await expect(loadPolicyFile(fixture('broken.yaml'))).rejects.toSatisfy((error: unknown) => {
      return (
        error instanceof PolicyFileError &&
        isToolgateError(error) &&
        error.issues.length === 2 &&
        /broken\.yaml:7:13/.test(error.message)
      );
    });
  });

  it('refuses a missing version, a wrong pattern type and an empty condition', () => {
    expect(issuesOf('rules: []\n')[0]!.message).toBe('missing "version"; expected it to be given');
    const issues = issuesOf(
      'version: 1\nrules:\n  - name: a\n    result: deny\n    tools: 7\n    when:\n      x: {}\n',
    );
    expect(issues.map((i) => i.message)).toEqual([
      'rules[0].tools: expected a pattern (a string) or a non-empty list of patterns, got number 7',
      'rules[0].when.x: expected at least one test: exists, equals, oneOf, prefix, glob, path, gt, gte, lt or lte',
    ]);
    expect(issues[0]).toMatchObject({ line: 5, column: 12 });
  });

  it('refuses two tools with one canonical form, and one agent declaring both spellings', () => {
    const [a] = issuesOf('version: 1\ntools:\n  search: {}\n  SEARCH: {}\n');
    expect(a).toMatchObject({ code: 'canonical-collision', line: 4, column: 3 });
    const [b] = issuesOf('version: 1\nagents:\n  bot:\n    tools: [search, "ｓｅａｒｃｈ"]\n');
    expect(b).toMatchObject({ code: 'canonical-collision', line: 4, column: 21 });
  });

  it('refuses invisible characters in names, duplicate rule names, bad tool schemas and dot segments in path patterns', () => {
    expect(issuesOf('version: 1\ntools:\n  "sea\\u200Brch": {}\n')[0]!.code).toBe('invalid-name');
    const dup = issuesOf('version: 1\nrules:\n  - { name: a, result: deny }\n  - { name: a, result: allow }\n');
    expect(dup[0]).toMatchObject({ code: 'duplicate-rule', line: 4 });
    expect(issuesOf('version: 1\ntools:\n  t: { parameters: { type: nonsense } }\n')[0]!.code).toBe('invalid-tool');
    const dots = issuesOf(
      'version: 1\nrules:\n  - name: a\n    result: allow\n    when: { p: { path: "/data/../etc/**" } }\n',
    );
    expect(dots[0]!.message).toMatch(/holds a "\." or "\.\." segment/);
  });

  it('refuses the whole file: a broken rule means no policy at all', () => {
    const result = parsePolicy(
      'version: 1\nrules:\n  - { name: ok, result: allow, tools: a }\n  - { name: bad, result: maybe }\n',
    );
    expect(result.ok).toBe(false);
    expect(result.policy).toBeUndefined();
  });

  it('reports an unreadable file as an issue', async () => {
    const result = await readPolicyFile('/nonexistent/policy.yaml');
    expect(result.issues?.[0]).toMatchObject({ code: 'read', line: 1, column: 1 });
  });
});

describe('compiled rules', () => {
  const set = load(`
version: 1
tools:
  read_file: { tags: [read_only, file_system] }
  write_file: { tags: [destructive] }
  "mcp:search": { tags: [read_only] }
rules:
  - { name: deny_mcp, result: deny, tools: "mcp:*" }
  - { name: reads, result: allow, tags: [read_only] }
  - { name: writes, result: ask, tools: [write_file] }
  - { name: github_ns, result: allow, namespace: GitHub }
`);
  const registry = set.registry();
  const tool = (name: string) => registry.get(name)!;

  it('indexes exact names and tags, so a tool is offered only the rules that can match it', () => {
    expect(set.policy.candidates(tool('write_file')).map((r) => r.name)).toEqual(['writes']);
    expect(set.policy.candidates(tool('read_file')).map((r) => r.name)).toEqual(['reads']);
    expect(set.policy.candidates(tool('mcp:search')).map((r) => r.name)).toEqual(['deny_mcp', 'reads']);
  });

  it('matches name globs in canonical form, including tools registered after the policy', async () => {
    const live = new ToolRegistry();
    live.setPermissionPolicy(set.policy);
    live.register(defineTool({ name: 'MCP:Fetch', parameters: { type: 'object' }, execute: () => 'ran' }));
    live.register(defineTool({ name: 'github:issues', parameters: { type: 'object' }, execute: () => 'ran' }));
    const fetch = await live.invoke('mcp:fetch', {});
    expect(fetch.status).toBe('refused');
    expect(fetch.decision.rule).toBe('deny_mcp');
    const issues = await live.invoke('github:issues', {});
    expect(issues.status).toBe('ok');
    expect(issues.decision.rule).toBe('github_ns');
  });

  it('decides real calls through a registry, with file metadata overriding a tool’s own', async () => {
    const live = new ToolRegistry();
    live.setPermissionPolicy(set.policy);
    let ran = 0;
    const plain = defineTool({ name: 'read_file', parameters: { type: 'object' }, execute: () => ++ran });
    // Without the file's tags the tool is not read_only, so no rule selects it and the fallback denies.
    expect(set.policy.evaluate(plain, {}).by).toBe('fallback');
    live.register(set.withMetadata(plain));
    const result = await live.invoke('read_file', {});
    expect(result.status).toBe('ok');
    expect(ran).toBe(1);
    expect(result.decision.rule).toBe('reads');
  });

  it('builds GateContexts from the names in the file', async () => {
    const scoped = load(`
version: 1
agents: { bot: { tools: [a, b] } }
tenants: { acme: { tools: [a] } }
scopes: { read: [a], write: [b] }
fallback: allow
`);
    const reg = scoped.registry();
    expect(
      (await reg.decide({ name: 'b', arguments: {} }, scoped.context({ agent: 'bot', tenant: 'acme' }))).layer,
    ).toBe('tenant');
    expect(
      (await reg.decide({ name: 'a', arguments: {} }, scoped.context({ agent: 'bot', scopes: ['write'] }))).layer,
    ).toBe('caller');
    expect(
      (
        await reg.decide(
          { name: 'a', arguments: {} },
          scoped.context({ agent: 'bot', tenant: 'acme', scopes: ['read'] }),
        )
      ).effect,
    ).toBe('allow');
    // An unknown scope covers nothing.
    expect(
      (await reg.decide({ name: 'a', arguments: {} }, scoped.context({ agent: 'bot', scopes: ['admin'] }))).layer,
    ).toBe('caller');
  });

  it('never runs a stub tool', async () => {
    const open = load('version: 1\nfallback: allow\ntools: { t: {} }\n');
    const result = await open.registry().invoke('t', {});
    expect(result.status).toBe('error');
    expect(result.content).toMatch(/never runs/);
  });

  it('loads from disk what it parses from text', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-load-'));
    const file = join(dir, 'p.yml');
    await writeFile(file, 'version: 1\nrules: [{ name: r, result: allow, tools: x }]\n');
    const loaded = await loadPolicyFile(file);
    expect(loaded.file).toBe(file);
    expect(loaded.rules[0]!.position).toEqual({ line: 2, column: 9 });
  });
});
