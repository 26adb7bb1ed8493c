/**
 * watchPolicyFile diffs every reload when asked: the diff reaches onLoad, and a guard can keep the policy
 * in force (a reload that widens access held; a narrowing one in force).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PolicyDiff } from '../../src/policy-file/diff/index.js';
import type { PolicyIssue } from '../../src/policy-file/types.js';
import { watchPolicyFile, type PolicyWatch } from '../../src/policy-file/watch.js';

const policy = (result: string, amount: number): string => `version: 1
tools:
  refund: {}
rules:
  - { name: refunds, result: ${result}, tools: refund, when: { amount: { lte: ${amount} } } }
`;

let watch: PolicyWatch | undefined;
let dir = '';
afterEach(async () => {
  watch?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('watchPolicyFile with a diff guard', () => {
  it('hands each reload its diff; the guard holds a widening reload and lets a narrowing one in', async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-diff-watch-'));
    const file = join(dir, 'policy.yaml');
    await writeFile(file, policy('allow', 50));
    const diffs: (PolicyDiff | null)[] = [];
    const errors: PolicyIssue[] = [];
    watch = watchPolicyFile(file, {
      debounceMs: 10_000, // reloads are driven by reload() below, not by the file watch
      onLoad: (_set, _previous, diff) => diffs.push(diff),
      onError: (issues) => errors.push(...issues),
      guard: (diff) => !diff.widens,
    });
    const first = await watch.ready;
    expect(diffs).toEqual([null]);
    await writeFile(file, policy('allow', 100)); // widens: 51..100 newly allowed
    expect(await watch.reload()).toBe(first);
    expect(errors.at(-1)).toMatchObject({ code: 'held' });
    await writeFile(file, policy('allow', 10)); // narrows
    const narrowed = await watch.reload();
    expect(narrowed).not.toBe(first);
    const diff = diffs.at(-1)!;
    expect(diff.narrows).toBe(true);
    expect(diff.changes[0]).toMatchObject({ kind: 'denied', example: { tool: 'refund' } });
    const amount = diff.changes[0]!.example.arguments['amount'] as number;
    expect(amount > 10 && amount <= 50).toBe(true);
  });
});
