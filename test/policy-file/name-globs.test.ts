import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { parsePolicy } from '../../src/policy-file/index.js';

describe('name globs treat a tool name as a flat string', () => {
  it('selects names holding "/" with * and ?, so a deny rule cannot be slipped past', async () => {
    const loaded = parsePolicy(
      'version: 1\nfallback: allow\nrules:\n' +
        '  - { name: deny_github, tools: "github:*", result: deny }\n' +
        '  - { name: deny_admin, tools: "*admin*", result: deny }\n' +
        '  - { name: deny_one, tools: "a?c", result: deny }\n',
    );
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
    const registry = new ToolRegistry();
    const names = ['github:repos/delete', 'GitHub:Search', 'x/admin', 'ns/admin_panel', 'a/c', 'gitlab:repos/delete'];
    const ran: string[] = [];
    for (const name of names)
      registry.register(defineTool({ name, parameters: { type: 'object' }, execute: () => ran.push(name) }));
    registry.setPermissionPolicy(loaded.policy.policy);
    const rules: Record<string, string | null> = {};
    for (const name of names) rules[name] = (await registry.invoke(name, {})).decision.rule;
    expect(rules).toEqual({
      'github:repos/delete': 'deny_github',
      'GitHub:Search': 'deny_github',
      'x/admin': 'deny_admin',
      'ns/admin_panel': 'deny_admin',
      'a/c': 'deny_one',
      'gitlab:repos/delete': null,
    });
    expect(ran).toEqual(['gitlab:repos/delete']);
  });
});
