/**
 * Two real `toolgate gateway` processes (replicas) sharing one SQLite store (`--state-store`) and the
 * owner's approval key (TOOLGATE_APPROVAL_SECRET), SDK v2 clients pinned to 2026-07-28 over Streamable
 * HTTP with JWTs: an ask answered `input_required` by one replica is retried at the other and runs once;
 * the same retry at either replica again, or at both at once, is a protocol error (-32602) and nothing
 * runs twice; each refusal is in the replica's audit file.
 */
import { join } from 'node:path';
import type { ProtocolError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { jwksIssuer, spawnGateway, type SpawnedGateway } from '../gateway/fixtures/spawn.js';
import {
  cleanupsAfterEach,
  emptyFile,
  jsonLines,
  lines,
  modernClient,
  refusedWith32602 as refused,
  stdioUpstream,
  tempDir,
  untilListed,
  writePolicy,
} from '../harness.js';
import { MODERN } from './fixtures/processes.js';

const cleanups = cleanupsAfterEach();

interface InputRequired {
  readonly resultType: 'input_required';
  readonly requestState: string;
  readonly inputRequests: Record<string, unknown>;
}

async function replicas() {
  const dir = tempDir('replicas');
  const paidFile = emptyFile(dir, 'paid');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { modern: { ...stdioUpstream(MODERN, { LEDGER: paidFile }), connectTimeoutMs: 30_000 } },
      pin: 'off',
    },
    scopes: { payments: ['modern:pay', 'modern:echo'] },
    rules: [
      { name: 'payments', tools: ['modern:pay'], result: 'ask', reason: 'a person approves payments' },
      { name: 'rest', result: 'allow' },
    ],
  });
  const idp = await jwksIssuer();
  cleanups.push(() => idp.close());
  const store = `sqlite:${join(dir, 'state.db')}`;
  const start = async (name: string): Promise<SpawnedGateway & { audit: string }> => {
    const audit = join(dir, `${name}.audit.jsonl`);
    const flags = ['--stateless', '--jwks-url', idp.jwksUrl, '--jwt-issuer', idp.issuer];
    flags.push('--state-store', store, '--audit', audit);
    const g = await spawnGateway(policy, flags, { TOOLGATE_APPROVAL_SECRET: 'a shared approval key of the replicas' });
    cleanups.push(() => g.stop());
    return { ...g, audit };
  };
  // One after the other: both migrate the one SQLite file.
  const one = await start('one');
  const two = await start('two');
  const client = async (gateway: SpawnedGateway, sub: string) => {
    const c = await modernClient(cleanups, gateway.url, {
      name: sub,
      token: await idp.sign({ sub, aud: gateway.url.href, scope: 'payments' }),
      capabilities: { elicitation: { form: {} } },
      inputRequired: { autoFulfill: false },
    });
    await untilListed(c, 'modern:pay', gateway.stderr);
    return c;
  };
  const paid = () => lines(paidFile);
  const audited = (g: { audit: string }) =>
    jsonLines<{ type: string; approval?: { state: string; reason?: string } }>(g.audit);
  return { one, two, client, paid, audited };
}

const pay = { name: 'modern:pay', arguments: { to: 'bob', amount: 5 } };
const accept = { 'toolgate.approval': { action: 'accept', content: { approve: true } } };

describe('2026-07-28 approvals across two gateway processes on one SQLite store', { timeout: 240_000 }, () => {
  it('asked at one replica, retried at the other: runs once; a replay at either or both is refused', async () => {
    const { one, two, client, paid, audited } = await replicas();
    const aliceOne = await client(one, 'alice');
    const aliceTwo = await client(two, 'alice');

    const asked = (await aliceOne.callTool(pay, { allowInputRequired: true })) as unknown as InputRequired;
    expect(asked.resultType).toBe('input_required');
    expect(Object.keys(asked.inputRequests)).toEqual(['toolgate.approval']);
    expect(paid()).toEqual([]);

    // Another principal at the other replica cannot use alice's state.
    const mallory = await client(two, 'mallory');
    const moved = await refused(
      mallory.callTool({ ...pay, requestState: asked.requestState, inputResponses: accept } as never),
    );
    expect(moved.message).toMatch(/another (run or session|caller)/);

    // Retried at the other replica: verified under the shared key, claimed in the shared ledger, run once.
    const ran = await aliceTwo.callTool({ ...pay, requestState: asked.requestState, inputResponses: accept } as never);
    expect(ran.isError, JSON.stringify(ran)).toBeFalsy();
    expect(paid()).toEqual(['bob:5']);

    // Replayed at the first replica: the shared store knows it ran.
    const replay = await refused(
      aliceOne.callTool({ ...pay, requestState: asked.requestState, inputResponses: accept } as never),
    );
    expect(replay.message).toMatch(/used already/);

    // A second ask, retried at both replicas at once: exactly one runs it.
    const again = (await aliceTwo.callTool(pay, { allowInputRequired: true })) as unknown as InputRequired;
    const retry = { ...pay, requestState: again.requestState, inputResponses: accept } as never;
    const both = await Promise.allSettled([aliceOne.callTool(retry), aliceTwo.callTool(retry)]);
    expect(both.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = both.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((lost.reason as ProtocolError).code).toBe(-32602);
    expect(paid()).toEqual(['bob:5', 'bob:5']);

    // Audited where refused: the approval denied, with why.
    await expect
      .poll(() =>
        [...audited(one), ...audited(two)].flatMap((r) =>
          r.approval?.state === 'denied' ? [r.approval.reason ?? ''] : [],
        ),
      )
      .toEqual(
        expect.arrayContaining([
          expect.stringMatching(/another (run or session|caller)/),
          expect.stringMatching(/used already/),
        ]),
      );
    expect([...audited(one), ...audited(two)].filter((r) => r.approval?.state === 'approved')).toHaveLength(2);
  });
});
