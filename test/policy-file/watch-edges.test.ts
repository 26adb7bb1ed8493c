// watchPolicyFile when the host's onLoad throws: each test failed before its fix.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ToolRegistry, defineTool } from '../../src/index.js';
import { watchPolicyFile, type PolicyIssue, type PolicySet } from '../../src/policy-file/index.js';

const ALLOW = 'version: 1\nrules:\n  - { name: a, result: allow, tools: t }\n';
const ASK = 'version: 1\nrules:\n  - { name: b, result: ask, tools: t }\n';
const DENY = 'version: 1\nrules:\n  - { name: c, result: deny, tools: t }\n';

describe('watchPolicyFile with an onLoad that throws', () => {
  it('a later, stricter policy still applies (one throw does not stop the watch for good)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-watch-'));
    const file = join(dir, 'policy.yaml');
    await writeFile(file, ALLOW);
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 't', parameters: { type: 'object' }, execute: () => 'ran' }));
    const errors: { issues: readonly PolicyIssue[]; kept: PolicySet | null }[] = [];
    const watch = watchPolicyFile(file, {
      debounceMs: 10,
      onLoad: (set) => {
        // The host refuses a policy with an ask rule (it has no approver) by throwing.
        if (set.rules.some((r) => r.result === 'ask')) throw new Error('no approver for asks here');
        registry.setPermissionPolicy(set.policy);
      },
      onError: (issues, kept) => errors.push({ issues, kept }),
    });
    try {
      const first = await watch.ready;
      await writeFile(file, ASK);
      await expect(watch.reload()).resolves.toBe(first);
      expect(errors.at(-1)?.issues[0]?.message).toMatch(/no approver for asks here/);
      // The policy the host refused is not reported as in force.
      expect(watch.current()).toBe(first);
      await writeFile(file, DENY);
      const now = await watch.reload();
      expect(now?.rules.map((r) => r.name)).toEqual(['c']);
      expect((await registry.invoke('t', {})).status).toBe('refused');
    } finally {
      watch.close();
    }
  });
});
