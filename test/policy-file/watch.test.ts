import { mkdtemp, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ToolRegistry, defineTool } from '../../src/index.js';
import { watchPolicyFile, type PolicyIssue, type PolicySet } from '../../src/policy-file/index.js';

const GOOD_A = 'version: 1\nrules:\n  - { name: a, result: allow, tools: t }\n';
const GOOD_B = 'version: 1\nrules:\n  - { name: b, result: deny, tools: t }\n';
const BROKEN = 'version: 1\nrules:\n  - { name: b, result: deny, tools: t\n';

function waitFor<T>(events: T[], count: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = setInterval(() => {
      if (events.length >= count) {
        clearInterval(poll);
        resolve();
      } else if (Date.now() - started > 10_000) {
        clearInterval(poll);
        reject(new Error(`timed out waiting for ${count} events, saw ${events.length}`));
      }
    }, 10);
  });
}

describe('watchPolicyFile', () => {
  it('keeps the policy in force when a reload fails, and reports why', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-watch-'));
    const file = join(dir, 'policy.yaml');
    await writeFile(file, GOOD_A);
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 't', parameters: { type: 'object' }, execute: () => 'ran' }));
    const loads: PolicySet[] = [];
    const errors: { issues: readonly PolicyIssue[]; kept: PolicySet | null }[] = [];
    const watch = watchPolicyFile(file, {
      debounceMs: 20,
      onLoad: (set) => {
        loads.push(set);
        registry.setPermissionPolicy(set.policy);
      },
      onError: (issues, kept) => errors.push({ issues, kept }),
    });
    try {
      const first = await watch.ready;
      expect(first?.rules[0]!.name).toBe('a');
      expect((await registry.invoke('t', {})).status).toBe('ok');

      await writeFile(file, BROKEN);
      await waitFor(errors, 1);
      expect(errors[0]!.kept).toBe(first);
      expect(errors[0]!.issues[0]).toMatchObject({ file, code: 'yaml' });
      expect(watch.current()).toBe(first);
      expect((await registry.invoke('t', {})).status).toBe('ok');

      // Editors that save by writing a temporary file and renaming it are seen too.
      await writeFile(join(dir, 'policy.yaml.tmp'), GOOD_B);
      await rename(join(dir, 'policy.yaml.tmp'), file);
      await waitFor(loads, 2);
      expect(watch.current()?.rules[0]!.name).toBe('b');
      expect(watch.current()?.version).not.toBe(first?.version);
      const refused = await registry.invoke('t', {});
      expect(refused.status).toBe('refused');
      expect(refused.decision.rule).toBe('b');
    } finally {
      watch.close();
    }
  });

  it('starts with no policy in force when the first load fails', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-watch-'));
    const file = join(dir, 'policy.yaml');
    await writeFile(file, BROKEN);
    const errors: (PolicySet | null)[] = [];
    const watch = watchPolicyFile(file, { onError: (_issues, kept) => errors.push(kept) });
    try {
      expect(await watch.ready).toBeNull();
      expect(errors).toEqual([null]);
      await writeFile(file, GOOD_A);
      expect((await watch.reload())?.rules[0]!.name).toBe('a');
    } finally {
      watch.close();
    }
  });

  it('validates its options', () => {
    expect(() => watchPolicyFile('', {})).toThrow(TypeError);
    expect(() => watchPolicyFile('x.yaml', { debounceMs: -1 })).toThrow(/debounceMs/);
    expect(() => watchPolicyFile('x.yaml', { onLoad: 5 as never })).toThrow(/onLoad/);
  });
});
