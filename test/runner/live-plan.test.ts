/** The runner reads the tenant's plan per call as the provider gives it: a broken entry still fails the run closed. */
import { expect, it } from 'vitest';
import { AgentRunner, PermissionPolicy, ToolRegistry, defineTool } from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';

it('a plan holding a non-string fails the run with a ConfigurationError and runs nothing', async () => {
  const ran: string[] = [];
  const registry = new ToolRegistry();
  registry.register(defineTool({ name: 'search', parameters: { type: 'object' }, execute: () => void ran.push('s') }));
  registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow' }));
  const runner = new AgentRunner({
    registry,
    model: new ScriptedModel([{ toolCalls: [{ id: 'c', name: 'search', arguments: {} }] }, { text: 'done' }]),
    tenants: () => ({ tools: ['search', 7 as unknown as string] }),
  });
  const result = await runner.run({ name: 'a', tools: ['search'] }, 'go', { tenant: 't' });
  expect(result.status).toBe('failed');
  expect(result.error).toMatchObject({ name: 'ConfigurationError' });
  expect(ran).toEqual([]);
});
