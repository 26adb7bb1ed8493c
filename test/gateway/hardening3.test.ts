// Issue 22 ("Hardening round 3"), the gateway items, through the real `toolgate gateway` process (stdio, or
// --http for the protected resource metadata) in front of the recording upstream: a timed-out call is told
// and audited as an unknown outcome, a rule without a reason is named once, shadow mode is said on start and
// reload and refused without an audit sink, and the RFC 9728 metadata lists the policy's scopes.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  auditLines,
  cleanupsAfterEach,
  emptyFile,
  jsonLines,
  RECORDING,
  ROOT,
  stdioUpstream,
  tempDir,
  text,
  until,
  writePolicy,
} from '../harness.js';
import { jwksIssuer, runToExit, spawnGateway, stdioGateway as stdioGatewayOf } from './fixtures/spawn.js';

const MAIN = join(ROOT, 'src/cli/main.ts');
const cleanups = cleanupsAfterEach();
const isTool = (r: Record<string, unknown>): boolean => r['type'] === 'tool';

type Policy = Record<string, unknown>;

/** A policy file in front of the recording upstream; `gateway`/`rest` add to or replace its parts. */
function sandbox(parts: { upstream?: Policy; gateway?: Policy; rules?: readonly Policy[]; rest?: Policy } = {}) {
  const dir = tempDir('h3');
  const record = emptyFile(dir, 'received.jsonl');
  const write = (over: typeof parts = parts) =>
    writePolicy(dir, {
      gateway: {
        upstreams: { rec: { ...stdioUpstream(RECORDING, { RECORD: record, SLOW_MS: '1500' }), ...over.upstream } },
        pin: 'off',
        ...over.gateway,
      },
      rules: over.rules ?? [{ name: 'rest', result: 'allow' }],
      ...over.rest,
    });
  const policy = write();
  return { dir, policy, write, received: () => jsonLines(record), audit: join(dir, 'audit.jsonl') };
}

const stdioGateway = (policy: string, extra: string[] = []) =>
  stdioGatewayOf(cleanups, ['--policy', policy, ...extra], 'rec:echo');

describe('issue 22 through the real toolgate gateway', { timeout: 180_000 }, () => {
  it('a timed-out upstream call is an unknown outcome, to check before any retry (client text and audit)', async () => {
    const box = sandbox({ upstream: { callTimeoutMs: 300 } });
    const { client } = await stdioGateway(box.policy, ['--audit', box.audit]);
    const result = await client.callTool({ name: 'rec:slow', arguments: {} });
    expect(result.isError).toBe(true);
    expect(text(result)).not.toMatch(/cancelled upstream/);
    expect(text(result)).toMatch(/did not answer within 300 ms/);
    expect(text(result)).toMatch(/outcome of the call is unknown/);
    expect(text(result)).toMatch(/may have completed it/);
    expect(text(result)).toMatch(/[Cc]heck whether it took effect before any retry/);
    // The upstream did complete it, after the gateway stopped waiting: exactly what the text warns of.
    await until('the slow call completed upstream', () => box.received().some((r) => r['completed'] === true));
    const record = (await auditLines(box.audit, (all) => all.some(isTool))).find(isTool);
    expect(record).toMatchObject({ status: 'error', outcome: 'unknown' });
    expect(String(record!['reason'])).toMatch(/outcome of the call is unknown/);
  });

  it("the gate's own tool timeout (tools.<name>.timeoutMs) is an unknown outcome too", async () => {
    const box = sandbox({ rest: { tools: { 'rec:slow': { timeoutMs: 300 } } } });
    const { client } = await stdioGateway(box.policy, ['--audit', box.audit]);
    const result = await client.callTool({ name: 'rec:slow', arguments: {} });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/outcome of the call is unknown/);
    expect((await auditLines(box.audit, (all) => all.some(isTool))).find(isTool)).toMatchObject({
      status: 'error',
      outcome: 'unknown',
    });
  });

  it('a rule without a reason is named once in the refusal, with what the model may do', async () => {
    const box = sandbox({
      rules: [
        { name: 'no-secrets', tools: 'rec:refund', result: 'deny' },
        { name: 'rest', result: 'allow' },
      ],
    });
    const { client } = await stdioGateway(box.policy);
    const result = await client.callTool({ name: 'rec:refund', arguments: { order: 'A', amount: 1 } });
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(
      'Tool call refused (rule "no-secrets"). This decision is final and cannot be appealed; do not retry it.',
    );
    expect(box.received().filter((r) => r['name'] === 'refund')).toHaveLength(0);
  });

  describe('shadow mode is said, and refused when nothing records it', () => {
    const SHADOW_RULES = [
      { name: 'no-refunds', tools: 'rec:refund', result: 'deny', reason: 'refunds are retired', mode: 'shadow' },
      { name: 'rest', result: 'allow' },
    ];

    it('toolgate gateway refuses a shadow rule, or mode: shadow, without --audit (exit 2, saying why)', async () => {
      const box = sandbox({ rules: SHADOW_RULES });
      const refused = await runToExit(['--policy', box.policy]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/rules in shadow mode: no-refunds, and nothing records/);
      expect(refused.stderr).toMatch(/--audit FILE.*--allow-unrecorded-shadow/s);
      box.write({ rest: { mode: 'shadow' } });
      const whole = await runToExit(['--policy', box.policy]);
      expect(whole.code).toBe(2);
      expect(whole.stderr).toMatch(/the whole policy is in shadow mode \(mode: shadow\)/);
      expect(box.received()).toHaveLength(0);
    });

    it('--allow-unrecorded-shadow serves it, and the start line says SHADOW', async () => {
      const box = sandbox({ rest: { mode: 'shadow' } });
      const { client, stderr } = await stdioGateway(box.policy, ['--allow-unrecorded-shadow']);
      expect(stderr()).toMatch(/enforcement mode: SHADOW/);
      expect((await client.callTool({ name: 'rec:echo', arguments: { text: 'x' } })).isError).not.toBe(true);
    });

    it('the mode is printed on start and on every reload; a reload to unrecorded shadow is refused', async () => {
      const box = sandbox({
        rules: [
          { name: 'no-refunds', tools: 'rec:refund', result: 'deny', reason: 'refunds are retired' },
          { name: 'rest', result: 'allow' },
        ],
      });
      const { client, stderr } = await stdioGateway(box.policy);
      expect(stderr()).toMatch(/enforcement mode: enforce \(every rule enforced\)/);
      const refund = () => client.callTool({ name: 'rec:refund', arguments: { order: 'A', amount: 1 } });
      // To shadow with no --audit: refused, the enforced policy stays.
      box.write({ rules: SHADOW_RULES });
      await until('the reload', () => /new policy was refused/.test(stderr()), stderr);
      expect(stderr()).toMatch(/new policy was refused.*rules in shadow mode: no-refunds, and nothing records/s);
      expect((await refund()).isError).toBe(true);
      expect(box.received().filter((r) => r['name'] === 'refund')).toHaveLength(0);
      // A reload that is taken says the mode too.
      box.write({ rules: [{ name: 'rest', result: 'allow' }] });
      await until('the second reload', () => / in force \(/.test(stderr()), stderr);
      expect(stderr()).toMatch(/in force \(.*\); enforcement mode: enforce \(every rule enforced\)/);
    });

    it('with --audit, a reload into shadow prints which rules are no longer enforced', async () => {
      const box = sandbox();
      const { stderr } = await stdioGateway(box.policy, ['--audit', box.audit]);
      box.write({ rules: SHADOW_RULES });
      await until('the reload', () => / in force \(/.test(stderr()), stderr);
      expect(stderr()).toMatch(
        /enforcement mode: enforce, except rules in shadow mode \(recorded, not enforced\): no-refunds/,
      );
    });

    it('toolgate mcp-proxy refuses unrecorded shadow too, and says the mode on start', async () => {
      const dir = tempDir('h3-proxy');
      const record = join(dir, 'received.jsonl');
      const policy = writePolicy(dir, { mode: 'shadow', rules: [{ name: 'rest', result: 'allow' }] });
      const proxy = (extra: string[]) => {
        const child = spawn(
          process.execPath,
          [
            '--import',
            'tsx',
            MAIN,
            'mcp-proxy',
            '--policy',
            policy,
            ...extra,
            '--',
            '/usr/bin/env',
            `RECORD=${record}`,
            process.execPath,
            '--import',
            'tsx',
            RECORDING,
          ],
          { stdio: ['pipe', 'ignore', 'pipe'] },
        );
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        cleanups.push(() => void child.kill());
        return { child, stderr: () => stderr };
      };
      const refused = proxy([]);
      const code = await new Promise((resolve) => refused.child.once('exit', resolve));
      expect(code).toBe(2);
      expect(refused.stderr()).toMatch(/whole policy is in shadow mode.*--allow-unrecorded-shadow/s);
      const allowed = proxy(['--audit', join(dir, 'audit.jsonl')]);
      await until('the proxy started', () => /enforcement mode:/.test(allowed.stderr()), allowed.stderr);
      expect(allowed.stderr()).toMatch(/enforcement mode: SHADOW/);
    });
  });

  it("the RFC 9728 metadata lists the policy's scopes, and a reload changes them", async () => {
    const issuer = await jwksIssuer();
    cleanups.push(() => issuer.close());
    const scopes = { 'refunds:write': ['rec:refund'], 'echo:use': ['rec:echo'] };
    const box = sandbox({ rest: { scopes } });
    const gateway = await spawnGateway(box.policy, ['--jwks-url', issuer.jwksUrl, '--jwt-issuer', issuer.issuer]);
    cleanups.push(() => gateway.stop());
    const metadata = async () =>
      (await (await fetch(new URL('/.well-known/oauth-protected-resource', gateway.url))).json()) as Record<
        string,
        unknown
      >;
    expect((await metadata())['scopes_supported']).toEqual(['refunds:write', 'echo:use']);
    box.write({ rest: { scopes: { 'echo:use': ['rec:echo'] } } });
    await until('the reload', () => / in force \(/.test(gateway.stderr()), gateway.stderr);
    expect((await metadata())['scopes_supported']).toEqual(['echo:use']);
  });
});
