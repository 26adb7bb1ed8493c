import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { run } from '../../src/cli/program.js';
import { shadowReport } from '../../src/cli/report.js';
import type { PinnedDefinition } from '../../src/gateway/pins.js';
import { auditLines, cleanupsAfterEach, DOCS, stdioUpstream, tempDir, writePolicy } from '../harness.js';
import { stdioGateway } from './fixtures/spawn.js';

const cleanups = cleanupsAfterEach();

function dir(): string {
  return tempDir('gwcli');
}

async function cli(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

const POLICY = {
  version: 1,
  tools: {
    read_file: { tags: ['read_only'] },
    send_email: { tags: ['network'] },
    delete_file: { tags: ['destructive'] },
  },
  agents: { concierge: { tools: ['read_file', 'send_email', 'delete_file'] } },
  tenants: { free: { tools: ['read_file'] } },
  rules: [
    { name: 'reads', tools: 'read_file', when: { path: { path: '/data/**' } }, result: 'allow' },
    { name: 'mail', tools: 'send_email', result: 'ask' },
    {
      name: 'no-deletes',
      tools: 'delete_file',
      result: 'deny',
      mode: 'shadow',
      reason: 'deletes are being phased out',
    },
    { name: 'deletes', tools: 'delete_file', result: 'allow' },
  ],
};

describe('toolgate test', () => {
  const cases = [
    {
      name: 'reads in /data',
      call: { name: 'read_file', arguments: { path: '/data/a' } },
      expect: { effect: 'allow', rule: 'reads' },
    },
    { name: 'mail asks', call: { name: 'send_email', arguments: {} }, expect: { effect: 'ask', rule: 'mail' } },
    {
      name: 'free tenant',
      tenant: 'free',
      call: { name: 'send_email', arguments: {} },
      expect: { effect: 'deny', layer: 'tenant' },
    },
    {
      name: 'shadow rule is not enforced',
      call: { name: 'delete_file', arguments: {} },
      expect: { effect: 'allow', rule: 'deletes' },
    },
  ];

  it('passes when every case matches (exit 0), in text, TAP and JUnit', async () => {
    const d = dir();
    writeFileSync(join(d, 'policy.yaml'), stringify(POLICY));
    writeFileSync(join(d, 'cases.yaml'), stringify({ cases }));
    const text = await cli(['test', join(d, 'policy.yaml'), join(d, 'cases.yaml')]);
    expect(text.stderr).toBe('');
    expect(text).toMatchObject({ code: 0 });
    expect(text.stdout).toContain('4 passed, 0 failed');
    const tap = await cli(['test', join(d, 'policy.yaml'), join(d, 'cases.yaml'), '--format', 'tap']);
    expect(tap.stdout).toMatch(/^TAP version 13\n1\.\.4\nok 1 - reads in \/data\n/);
    const junit = await cli(['test', join(d, 'policy.yaml'), join(d, 'cases.yaml'), '--format', 'junit']);
    expect(junit.stdout).toContain('<testsuite name=');
    expect(junit.stdout).toContain('tests="4" failures="0"');
  });

  it('fails (exit 1) on a mismatch, naming what differed, and reports it as a JUnit failure and TAP not ok', async () => {
    const d = dir();
    writeFileSync(join(d, 'policy.yaml'), stringify(POLICY));
    const wrong = [
      ...cases,
      {
        name: 'outside /data',
        call: { name: 'read_file', arguments: { path: '/etc/passwd' } },
        expect: { effect: 'allow' },
      },
      { name: 'wrong rule', call: { name: 'send_email', arguments: {} }, expect: { effect: 'ask', rule: 'reads' } },
    ];
    writeFileSync(join(d, 'cases.yaml'), stringify(wrong));
    const text = await cli(['test', join(d, 'policy.yaml'), join(d, 'cases.yaml')]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('FAIL outside /data');
    expect(text.stdout).toContain('effect: expected allow, got deny');
    expect(text.stdout).toContain('rule: expected "reads", got "mail"');
    expect(text.stdout).toContain('4 passed, 2 failed');
    const junit = await cli(['test', join(d, 'policy.yaml'), join(d, 'cases.yaml'), '--format', 'junit']);
    expect(junit.code).toBe(1);
    expect(junit.stdout).toContain('failures="2"');
    expect(junit.stdout).toContain('<failure message="effect: expected allow, got deny">');
    const tap = await cli(['test', join(d, 'policy.yaml'), join(d, 'cases.yaml'), '--format', 'tap']);
    expect(tap.stdout).toContain('not ok 5 - outside /data');
  });

  it('refuses a broken cases file (exit 2) and a broken policy (exit 1)', async () => {
    const d = dir();
    writeFileSync(join(d, 'policy.yaml'), stringify(POLICY));
    writeFileSync(join(d, 'cases.yaml'), stringify([{ call: { name: 'x' }, expect: { effect: 'permit' } }]));
    const bad = await cli(['test', join(d, 'policy.yaml'), join(d, 'cases.yaml')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('cases[0].expect.effect: expected allow, deny or ask, got "permit"');
    writeFileSync(join(d, 'broken.yaml'), 'version: 2\n');
    expect((await cli(['test', join(d, 'broken.yaml'), join(d, 'cases.yaml')])).code).toBe(1);
  });
});

describe('shadow mode', { timeout: 120_000 }, () => {
  it('a shadow rule is compiled out of the enforced policy and into the shadow policy', async () => {
    const { parsePolicy } = await import('../../src/policy-file/index.js');
    const result = parsePolicy(stringify(POLICY));
    expect(result.ok).toBe(true);
    const set = result.policy!;
    expect(set.policy.rules.map((r) => r.name)).toEqual(['reads', 'mail', 'deletes']);
    expect(set.shadow?.rules.map((r) => r.name)).toEqual(['reads', 'mail', 'no-deletes', 'deletes']);
    const whole = parsePolicy(stringify({ ...POLICY, mode: 'shadow' })).policy!;
    expect(whole.policy.rules).toEqual([]);
    expect(whole.policy.fallback).toBe('allow');
    expect(whole.shadow?.fallback).toBe('deny');
  });

  it('the gateway records what a shadow rule would have done; toolgate report summarises it', async () => {
    const d = dir();
    const policy = writePolicy(d, {
      gateway: { upstreams: { docs: stdioUpstream(DOCS) } },
      rules: [
        { name: 'no-echo', tools: 'docs:echo', result: 'deny', mode: 'shadow', reason: 'echo is being retired' },
        { name: 'docs', namespace: 'docs', result: 'allow' },
      ],
      resources: [
        { name: 'no-public', uri: 'docs://public/**', result: 'deny', mode: 'shadow' },
        { name: 'all', result: 'allow' },
      ],
    });
    const audit = join(d, 'audit.jsonl');
    const { client } = await stdioGateway(cleanups, ['--policy', policy, '--audit', audit]);
    const echoed = (await client.callTool({ name: 'docs:echo', arguments: { text: 'hi' } })) as CallToolResult;
    expect(echoed.content).toEqual([{ type: 'text', text: 'echo: hi' }]); // not enforced
    await client.readResource({ uri: 'docs://public/readme' });
    await client.close();
    const records = await auditLines(audit, (all) => all.some((r) => r['type'] === 'resource'));
    expect(records[0]).toMatchObject({
      type: 'mode',
      event: 'start',
      mode: 'enforce',
      shadowRules: ['no-echo', 'resources:no-public'],
    });
    expect(records.find((r) => r['type'] === 'tool')).toMatchObject({
      decision: { effect: 'allow', rule: 'docs' },
      shadow: { effect: 'deny', rule: 'no-echo', reason: 'echo is being retired' },
    });
    const report = await cli(['report', audit]);
    expect(report.code).toBe(0);
    expect(report.stdout).toMatch(/no-echo\s+tool\s+1\s+0\s+0\s+docs:echo ×1/);
    expect(report.stdout).toMatch(/no-public\s+resource\s+1/);
    expect(report.stdout).toContain('in enforce mode');
  });

  it('report counts lines that are not records, and says when no shadow rule differed', () => {
    const report = shadowReport(['not json', JSON.stringify({ type: 'tool', time: 't', decision: null }), '']);
    expect(report).toMatchObject({ records: 1, skipped: 1, decisions: 1, rules: [] });
  });

  it('a gateway whose policy does not load refuses to start (exit 2)', async () => {
    const d = dir();
    writeFileSync(join(d, 'policy.yaml'), 'version: 1\nrules:\n  - { name: x, result: maybe }\n');
    const result = await cli(['gateway', '--policy', join(d, 'policy.yaml')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/refusing to start: .*expected one of "allow", "deny", "ask"/s);
    writeFileSync(join(d, 'policy.yaml'), 'version: 1\n');
    const noUpstream = await cli(['gateway', '--policy', join(d, 'policy.yaml')]);
    expect(noUpstream.code).toBe(2);
    expect(noUpstream.stderr).toContain('names no upstream server');
    writeFileSync(
      join(d, 'policy.yaml'),
      stringify({
        version: 1,
        gateway: {
          upstreams: {
            gh: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer ${NO_SUCH_TOKEN_VAR}' } },
          },
        },
      }),
    );
    const noVar = await cli(['gateway', '--policy', join(d, 'policy.yaml')]);
    expect(noVar.code).toBe(2);
    expect(noVar.stderr).toContain(
      'gateway.upstreams.gh.headers.Authorization: the environment variable NO_SUCH_TOKEN_VAR is not set',
    );
  });
});

describe('toolgate pin', { timeout: 120_000 }, () => {
  it('pins the upstream tools, then --accept re-approves a drifted definition', async () => {
    const d = dir();
    const policy = writePolicy(d, {
      gateway: { upstreams: { docs: stdioUpstream(DOCS) } },
    });
    const first = await cli(['pin', '--policy', policy]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/policy\.lock\.json: \d+ tools pinned, \d+ new: .*docs:echo/);
    const lockFile = join(d, 'policy.lock.json');
    const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as {
      tools: Record<string, { definition: PinnedDefinition }>;
    };
    // Simulate the upstream having changed: the pin says something else now (a valid, re-hashed entry).
    const { PinStore } = await import('../../src/gateway/pins.js');
    const store = new PinStore(lockFile);
    const echo = lock.tools['docs:echo']!.definition;
    writeFileSync(lockFile, JSON.stringify({ version: 1, tools: {} }));
    store.pin(new Map<string, PinnedDefinition>([['docs:echo', { ...echo, description: 'the old description' }]]));
    const drift = await cli(['pin', '--policy', policy]);
    expect(drift.code).toBe(1);
    expect(drift.stdout).toContain('drift docs:echo');
    expect(drift.stdout).toContain('-  "description": "the old description"');
    expect(drift.stdout).toContain('+  "description": "Echo the text back"');
    // Each drift names its definition's sha256 (short in text, whole in --json), and the hint is the bound accept.
    const { hashOf } = await import('../../src/crypto.js');
    const offered = hashOf(echo);
    expect(drift.stdout).toContain(`drift docs:echo sha256:${offered.slice(0, 12)}`);
    const hint = /run `toolgate pin (--policy \S+ --accept docs:echo=[0-9a-f]{64})`/.exec(drift.stdout);
    expect(hint?.[1]).toBe(`--policy ${policy} --accept docs:echo=${offered}`);
    const json = await cli(['pin', '--policy', policy, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ drift: [{ tool: 'docs:echo', sha256: offered }] });
    const accepted = await cli(['pin', ...hint![1]!.split(' ')]);
    expect(accepted).toMatchObject({ code: 0 });
    expect(accepted.stdout).toContain('accepted: docs:echo');
    expect((await cli(['pin', '--policy', policy])).code).toBe(0);
  });

  it('refuses a lock file edited by hand', async () => {
    const d = dir();
    writeFileSync(
      join(d, 'policy.lock.json'),
      JSON.stringify({
        version: 1,
        tools: { x: { sha256: 'abc', definition: { name: 'x', inputSchema: {} }, at: '' } },
      }),
    );
    const { PinStore } = await import('../../src/gateway/pins.js');
    expect(() => new PinStore(join(d, 'policy.lock.json'))).toThrow(/does not match its sha256/);
  });
});
