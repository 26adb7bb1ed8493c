/**
 * Policy reload: a real `toolgate gateway` process (stdio) with a real upstream and a real MCP SDK client.
 * A reload swaps the policy atomically, a broken file keeps the old verdicts, and every change of
 * enforcement is an audit record that `toolgate report` shows.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { run } from '../../src/cli/program.js';
import { gatewayConfigOf } from '../../src/gateway/index.js';
import {
  auditLines,
  cleanupsAfterEach,
  DOCS,
  gatewayOn,
  inMemoryClient,
  jsonLines,
  stdioUpstream,
  tempDir,
  text,
} from '../harness.js';
import { stdioGateway } from './fixtures/spawn.js';

const cleanups = cleanupsAfterEach();

function policyData(rules: unknown[], extra: Record<string, unknown> = {}) {
  return {
    version: 1,
    gateway: { upstreams: { docs: stdioUpstream(DOCS) } },
    rules,
    ...extra,
  };
}
const ENFORCED = [
  { name: 'no-echo', tools: 'docs:echo', result: 'deny', reason: 'echo is retired' },
  { name: 'docs', namespace: 'docs', result: 'allow' },
];
const SHADOWED = [
  { name: 'no-echo', tools: 'docs:echo', result: 'deny', reason: 'echo is retired', mode: 'shadow' },
  { name: 'docs', namespace: 'docs', result: 'allow' },
];

function records(file: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  return jsonLines(file);
}

/** Waits (polling, no timing asserted) until the audit file holds `count` mode records of `event`. */
async function modeRecord(file: string, event: string, count = 1): Promise<Record<string, unknown>> {
  for (let i = 0; i < 600; i++) {
    const found = records(file).filter((r) => r['type'] === 'mode' && r['event'] === event);
    if (found.length >= count) return found[count - 1]!;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ${event} record #${count} in ${file}:\n${readFileSync(file, 'utf8')}`);
}

const gatewayProcess = (args: string[]) => stdioGateway(cleanups, args);

async function cli(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('policy reload in a running gateway', { timeout: 180_000 }, () => {
  it('a file change swaps the policy: refused before, allowed after, a broken file keeps the old verdicts, every change audited', async () => {
    const dir = tempDir('reload');
    const policy = join(dir, 'policy.yaml');
    const audit = join(dir, 'audit.jsonl');
    writeFileSync(policy, stringify(policyData(ENFORCED)));
    const { client, stderr } = await gatewayProcess(['--policy', policy, '--audit', audit]);
    const echo = () => client.callTool({ name: 'docs:echo', arguments: { text: 'hi' } }) as Promise<CallToolResult>;

    const before = await echo();
    expect(before.isError).toBe(true);
    expect(text(before)).toContain('echo is retired');

    // enforce → shadow: now allowed, and the flip is named in the audit.
    writeFileSync(policy, stringify(policyData(SHADOWED)));
    const flipped = await modeRecord(audit, 'reload');
    expect(flipped['changes']).toContain('rule "no-echo": enforce → shadow');
    expect(flipped['shadowRules']).toEqual(['no-echo']);
    expect(text(await echo())).toBe('echo: hi');

    // A broken file: refused, recorded, and the shadow policy's verdicts stay in force.
    writeFileSync(policy, 'version: 1\nrules:\n  - { name: x, result: perhaps }\n');
    const refused = await modeRecord(audit, 'refused');
    expect(refused['policy']).toBe(flipped['policy']);
    expect(String(refused['error'])).toContain('was refused');
    expect(text(await echo())).toBe('echo: hi');

    // shadow → enforce again: refused again.
    writeFileSync(policy, stringify(policyData(ENFORCED)));
    const back = await modeRecord(audit, 'reload', 2);
    expect(back['changes']).toContain('rule "no-echo": shadow → enforce');
    expect((await echo()).isError).toBe(true);
    expect(stderr()).toContain('the new policy was refused');

    // The tool records name the verdict under each policy; report shows every mode change.
    // The last call's line is written just after its answer: waited for.
    const isTool = (r: Record<string, unknown>) => r['type'] === 'tool';
    const all = await auditLines(audit, (lines) => lines.filter(isTool).length >= 4);
    const tools = all.filter(isTool) as { decision: { effect: string } }[];
    expect(tools.map((r) => r.decision.effect)).toEqual(['deny', 'allow', 'allow', 'deny']);
    const report = await cli(['report', audit]);
    expect(report.code).toBe(0);
    expect(report.stdout).toContain('reload: policy');
    expect(report.stdout).toContain('rule "no-echo": enforce → shadow');
    expect(report.stdout).toMatch(/refused: policy .* the new policy was refused/);
    const found = await cli(['audit', audit, '--tool', 'docs:echo', '--json']);
    expect(found.code).toBe(0);
  });

  it('with --no-watch, SIGHUP reloads: a call allowed before is refused after', async () => {
    const dir = tempDir('reload');
    const policy = join(dir, 'policy.yaml');
    const audit = join(dir, 'audit.jsonl');
    writeFileSync(policy, stringify(policyData(SHADOWED)));
    const { client, pid } = await gatewayProcess(['--policy', policy, '--audit', audit, '--no-watch']);
    const echo = () => client.callTool({ name: 'docs:echo', arguments: { text: 'hi' } }) as Promise<CallToolResult>;
    expect(text(await echo())).toBe('echo: hi');
    writeFileSync(policy, stringify(policyData(ENFORCED.slice(0, 1), { fallback: 'deny' })));
    expect(text(await echo())).toBe('echo: hi'); // not watched: nothing changed yet
    process.kill(pid, 'SIGHUP');
    const reloaded = await modeRecord(audit, 'reload');
    expect(reloaded['changes']).toEqual(
      expect.arrayContaining(['rule "no-echo": shadow → enforce', 'rule "docs" removed (was enforce)']),
    );
    expect((await echo()).isError).toBe(true);
  });

  it('a gateway whose policy does not load refuses to start (exit 2)', async () => {
    const dir = tempDir('reload');
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, 'version: 1\nrules:\n  - { name: x, result: perhaps }\n');
    let stderr = '';
    const code = await run(['gateway', '--policy', policy], { stdout: () => undefined, stderr: (t) => (stderr += t) });
    expect(code).toBe(2);
    expect(stderr).toContain('refusing to start');
  });
});

describe('Gateway.reload (library)', { timeout: 120_000 }, () => {
  it('swaps rules, the context (agent tools) and pin mode; a refused set keeps everything; a whole-policy shadow flip is named', async () => {
    const dir = tempDir('reload');
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, stringify(policyData(ENFORCED, { agents: { bot: { tools: ['docs:echo', 'docs:fail'] } } })));
    const { gateway, records: audit } = await gatewayOn(cleanups, policy, (set) => ({
      pins: gatewayConfigOf(set).pins,
      context: set.context({ agent: 'bot' }),
    }));
    const client = await inMemoryClient(cleanups, gateway);
    const listed = async () => (await client.listTools()).tools.map((t) => t.name).sort();
    expect(await listed()).toEqual(['docs:echo', 'docs:fail']);

    // The agent loses echo, and the whole policy goes to shadow mode: both named.
    const next = policyData(ENFORCED, { mode: 'shadow', agents: { bot: { tools: ['docs:fail'] } } });
    writeFileSync(policy, stringify(next));
    const result = await gateway.reload(policy, { context: (p) => p.context({ agent: 'bot' }) });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.changes).toEqual(
      expect.arrayContaining([expect.stringContaining('the whole policy: enforce → shadow'), 'agents changed']),
    );
    expect(await listed()).toEqual(['docs:fail']);
    const refusedCall = (await client.callTool({ name: 'docs:echo', arguments: { text: 'x' } })) as CallToolResult;
    expect(refusedCall.isError).toBe(true);
    expect(gateway.policy.version).toBe(result.version);

    // A context function that throws (the agent is gone) refuses the reload; the policy in force stays.
    writeFileSync(policy, stringify(policyData(ENFORCED)));
    const refused = await gateway.reload(policy, { context: (p) => p.context({ agent: 'bot' }) });
    expect(refused).toMatchObject({ ok: false, version: result.version });
    expect(gateway.policy.version).toBe(result.version);
    expect(await listed()).toEqual(['docs:fail']);
    expect(audit.filter((r) => r.type === 'mode').map((r) => (r as { event: string }).event)).toEqual([
      'start',
      'reload',
      'refused',
    ]);

    // Pin mode refuse → off is a change of enforcement, named.
    writeFileSync(policy, stringify(policyData(ENFORCED, { agents: { bot: { tools: ['docs:fail'] } } })));
    const unpinned = await gateway.reload(policy, {
      context: (p) => p.context({ agent: 'bot' }),
      pins: null,
    });
    expect(unpinned.ok && unpinned.changes).toEqual(
      expect.arrayContaining(['pinned definitions: refuse → off', expect.stringContaining('shadow → enforce')]),
    );
  });
});

describe('a reload while a call waits for a person', { timeout: 120_000 }, () => {
  async function waiting(first: Record<string, unknown>) {
    const dir = tempDir('reload');
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, stringify(first));
    const asked: { id: string; answer: (a: { effect: 'allow' | 'deny' }) => void }[] = [];
    const { gateway } = await gatewayOn(cleanups, policy, (set) => ({
      context: set.context({ agent: 'bot' }),
      inbox: { ask: (request) => new Promise((answer) => asked.push({ id: request.id, answer })) },
    }));
    const client = await inMemoryClient(cleanups, gateway);
    const call = client.callTool({ name: 'docs:echo', arguments: { text: 'x' } }) as Promise<CallToolResult>;
    await expect.poll(() => asked.length).toBe(1);
    return { policy, gateway, asked, call };
  }
  const ASK = [{ name: 'ask-echo', tools: 'docs:echo', result: 'ask' }];

  it('approved after the agent lost the tool: refused by the allowlist in force, not run', async () => {
    const w = await waiting(policyData(ASK, { agents: { bot: { tools: ['docs:echo'] } } }));
    writeFileSync(w.policy, stringify(policyData(ASK, { agents: { bot: { tools: ['docs:fail'] } } })));
    expect((await w.gateway.reload(w.policy, { context: (p) => p.context({ agent: 'bot' }) })).ok).toBe(true);
    w.asked[0]!.answer({ effect: 'allow' });
    const result = await w.call;
    expect(result.isError).toBe(true);
    expect(text(result)).not.toBe('echo: x');
  });

  it('approved after a rule that denies it was added: refused', async () => {
    const w = await waiting(policyData(ASK, { agents: { bot: { tools: ['docs:echo'] } } }));
    const deny = [{ name: 'no-echo', tools: 'docs:echo', result: 'deny', reason: 'now forbidden' }, ...ASK];
    writeFileSync(w.policy, stringify(policyData(deny, { agents: { bot: { tools: ['docs:echo'] } } })));
    expect((await w.gateway.reload(w.policy)).ok).toBe(true);
    w.asked[0]!.answer({ effect: 'allow' });
    expect(text(await w.call)).toContain('now forbidden');
  });

  it('approved after an unrelated change that still asks: asked again under the new policy, runs only on that answer', async () => {
    const w = await waiting(policyData(ASK, { agents: { bot: { tools: ['docs:echo'] } } }));
    writeFileSync(w.policy, stringify(policyData(ASK, { agents: { bot: { tools: ['docs:echo', 'docs:fail'] } } })));
    expect((await w.gateway.reload(w.policy)).ok).toBe(true);
    w.asked[0]!.answer({ effect: 'allow' });
    await expect.poll(() => w.asked.length).toBe(2);
    w.asked[1]!.answer({ effect: 'deny' });
    expect((await w.call).isError).toBe(true);
  });
});
