/**
 * A 2026-07-28 approval across a restart of the real `toolgate gateway` (SDK v2 clients pinned to
 * 2026-07-28 over Streamable HTTP, JWTs, TOOLGATE_APPROVAL_SECRET set): without `--state-store` the
 * retries are claimed in the process only, so a state is bound to the process's boot and refused after a
 * restart (the approved call never runs twice); with `--state-store` a state holds across the restart and
 * its replay is refused by the durable store.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MODERN } from '../mcp/fixtures/processes.js';
import {
  cleanupsAfterEach,
  emptyFile,
  lines,
  modernClient,
  refusedWith32602 as refused,
  stdioUpstream,
  tempDir,
  untilListed,
  writePolicy,
} from '../harness.js';
import { jwksIssuer, spawnGateway, type SpawnedGateway } from './fixtures/spawn.js';

const cleanups = cleanupsAfterEach();

const pay = { name: 'modern:pay', arguments: { to: 'bob', amount: 5 } };
const accept = { 'toolgate.approval': { action: 'accept', content: { approve: true } } };

async function setup(durable: boolean) {
  const dir = tempDir('restart');
  const paidFile = emptyFile(dir, 'paid');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { modern: { ...stdioUpstream(MODERN, { LEDGER: paidFile }), connectTimeoutMs: 30_000 } },
      pin: 'off',
    },
    scopes: { payments: ['modern:pay', 'modern:echo'] },
    rules: [
      { name: 'payments', tools: ['modern:pay'], result: 'ask' },
      { name: 'rest', result: 'allow' },
    ],
  });
  const idp = await jwksIssuer();
  cleanups.push(() => idp.close());
  const flags = ['--stateless', '--jwks-url', idp.jwksUrl, '--jwt-issuer', idp.issuer];
  if (durable) flags.push('--state-store', `sqlite:${join(dir, 'state.db')}`);
  const start = async (): Promise<SpawnedGateway> => {
    const g = await spawnGateway(policy, flags, { TOOLGATE_APPROVAL_SECRET: 'a shared approval key of the replicas' });
    cleanups.push(() => g.stop());
    return g;
  };
  const client = async (gateway: SpawnedGateway) => {
    const c = await modernClient(cleanups, gateway.url, {
      name: 'alice',
      token: await idp.sign({ sub: 'alice', aud: gateway.url.href, scope: 'payments' }),
      capabilities: { elicitation: { form: {} } },
      inputRequired: { autoFulfill: false },
    });
    await untilListed(c, 'modern:pay', gateway.stderr);
    return c;
  };
  return { start, client, paid: () => lines(paidFile) };
}

describe('2026-07-28 approvals across a gateway restart', { timeout: 240_000 }, () => {
  it('without --state-store: a state minted before the restart is refused after it; the call ran once', async () => {
    const { start, client, paid } = await setup(false);
    const first = await start();
    expect(first.stderr()).toMatch(/refused after a restart/);
    const c1 = await client(first);
    const asked = (await c1.callTool(pay, { allowInputRequired: true })) as unknown as { requestState: string };
    const ran = await c1.callTool({ ...pay, requestState: asked.requestState, inputResponses: accept } as never);
    expect(ran.isError, JSON.stringify(ran)).toBeFalsy();
    expect(paid()).toEqual(['bob:5']);
    // An asked-but-unanswered state too: refused after the restart, never run.
    const pending = (await c1.callTool(pay, { allowInputRequired: true })) as unknown as { requestState: string };
    first.stop();

    const second = await start();
    const c2 = await client(second);
    const replay = await refused(
      c2.callTool({ ...pay, requestState: asked.requestState, inputResponses: accept } as never),
    );
    expect(replay.message).toMatch(/issued by another gateway process or before a restart; ask again/);
    const late = await refused(
      c2.callTool({ ...pay, requestState: pending.requestState, inputResponses: accept } as never),
    );
    expect(late.message).toMatch(/issued by another gateway process or before a restart/);
    expect(paid()).toEqual(['bob:5']);
    // Asked anew after the restart: runs.
    const again = (await c2.callTool(pay, { allowInputRequired: true })) as unknown as { requestState: string };
    const ok = await c2.callTool({ ...pay, requestState: again.requestState, inputResponses: accept } as never);
    expect(ok.isError, JSON.stringify(ok)).toBeFalsy();
    expect(paid()).toEqual(['bob:5', 'bob:5']);
  });

  it('with --state-store: a state holds across the restart and its replay is refused', async () => {
    const { start, client, paid } = await setup(true);
    const first = await start();
    const c1 = await client(first);
    const asked = (await c1.callTool(pay, { allowInputRequired: true })) as unknown as { requestState: string };
    first.stop();
    await new Promise((resolve) => setTimeout(resolve, 500));

    const second = await start();
    const c2 = await client(second);
    const ran = await c2.callTool({ ...pay, requestState: asked.requestState, inputResponses: accept } as never);
    expect(ran.isError, JSON.stringify(ran)).toBeFalsy();
    expect(paid()).toEqual(['bob:5']);
    second.stop();
    await new Promise((resolve) => setTimeout(resolve, 500));

    const third = await start();
    const c3 = await client(third);
    const replay = await refused(
      c3.callTool({ ...pay, requestState: asked.requestState, inputResponses: accept } as never),
    );
    expect(replay.message).toMatch(/used already/);
    expect(paid()).toEqual(['bob:5']);
  });
});
