/**
 * Attack on the call scope entered and left around runToolCall's own await (branch `stdio`, no async
 * wrapper any more): two clients of one gateway share one real stdio upstream (the docs fixture); their calls
 * interleave — alice's `confirm` (the upstream elicits mid-call) while bob's `slow` calls (progress) start
 * and end around it, some of bob's calls refused by the gate or thrown before the upstream (an unknown tool,
 * a malformed argument). A scope left early would refuse the upstream call or lose its progress; left late
 * or shared, bob's progress or alice's elicitation would reach the other client, or a result the other's.
 * Held on the branch: the test passes there; kept as a guard.
 */
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import {
  cleanupsAfterEach,
  DOCS,
  gatewayOn,
  inMemoryClient,
  stdioUpstream,
  tempDir,
  text,
  untilListed,
  writePolicy,
} from '../harness.js';

const cleanups = cleanupsAfterEach();

describe('two clients over one stdio upstream, calls interleaved', () => {
  it('each gets only its own elicitation, progress and results', { timeout: 90_000 }, async () => {
    const dir = tempDir('atk-scope');
    const policy = writePolicy(dir, {
      gateway: { upstreams: { docs: { ...stdioUpstream(DOCS), connectTimeoutMs: 30_000 } }, pin: 'off' },
      rules: [
        { name: 'no-fail', tools: ['docs:fail'], result: 'deny', reason: 'not this one' },
        { name: 'all', result: 'allow' },
      ],
    });
    const { gateway, records } = await gatewayOn(cleanups, policy);
    const asked: Record<string, number> = { alice: 0, bob: 0 };
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const alice = await inMemoryClient(cleanups, gateway, { capabilities: { elicitation: { form: {} } } });
    const bob = await inMemoryClient(cleanups, gateway, { capabilities: { elicitation: { form: {} } } });
    alice.setRequestHandler(ElicitRequestSchema, async () => {
      asked['alice']!++;
      await held; // bob's calls run while alice's upstream call waits for her
      return { action: 'accept', content: { ok: true } };
    });
    bob.setRequestHandler(ElicitRequestSchema, async () => {
      asked['bob']!++;
      return { action: 'decline' };
    });
    await untilListed(alice, 'docs:confirm');
    await untilListed(bob, 'docs:slow');
    const confirm = alice.callTool({ name: 'docs:confirm', arguments: {} });
    await new Promise<void>((r) => {
      const t = setInterval(() => asked['alice']! > 0 && (clearInterval(t), r()), 5);
    });
    const bobProgress: number[] = [];
    const bobs = [];
    for (let i = 0; i < 6; i++) {
      if (i % 3 === 1) bobs.push(bob.callTool({ name: 'docs:fail', arguments: {} }));
      else if (i % 3 === 2) bobs.push(bob.callTool({ name: 'docs:echo', arguments: { text: 7 } }));
      else
        bobs.push(
          bob.callTool({ name: 'docs:slow', arguments: {} }, undefined, {
            onprogress: (p) => bobProgress.push(p.progress),
          }),
        );
    }
    const bobResults = await Promise.all(bobs);
    release();
    const aliceResult = await confirm;
    expect(text(aliceResult)).toBe('user said: accept {"ok":true}');
    expect(asked).toEqual({ alice: 1, bob: 0 });
    expect(bobResults.map((r) => [r.isError === true, text(r).slice(0, 4)])).toEqual([
      [false, 'done'],
      [true, expect.any(String)],
      [true, expect.any(String)],
      [false, 'done'],
      [true, expect.any(String)],
      [true, expect.any(String)],
    ]);
    expect(bobProgress.sort()).toEqual([1, 1, 2, 2, 3, 3]);
    // After all of it, a new call of each still finds its own scope.
    expect(text(await alice.callTool({ name: 'docs:echo', arguments: { text: 'a' } }))).toBe('echo: a');
    const ok = records.filter((r) => r.type === 'tool' && r.status === 'ok');
    expect(ok).toHaveLength(4);
  });
});
