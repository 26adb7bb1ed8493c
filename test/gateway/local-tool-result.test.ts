/**
 * A tool registered by hand on `gateway.registry` (not an upstream's) answers the client with a valid
 * `tools/call` result whatever it returns: its value when that is one already, else the gate's text of it.
 * Before, a plain string was handed on as the result and the client's SDK refused it (-32602).
 */
import { describe, expect, it } from 'vitest';
import { createGateway } from '../../src/gateway/index.js';
import { defineTool } from '../../src/index.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';
import { cleanupsAfterEach, inMemoryClient, tempDir, writePolicy } from '../harness.js';

const cleanups = cleanupsAfterEach();

describe('a tool on gateway.registry', () => {
  it('answers a valid tools/call result for any value it returns', async () => {
    const dir = tempDir('local-tool-result');
    const set = await loadPolicyFile(writePolicy(dir, { rules: [{ name: 'all', result: 'allow' }] }));
    const gateway = await createGateway({ policy: set, upstreams: {}, pins: null });
    cleanups.push(() => gateway.close());
    const values: Record<string, unknown> = {
      text: 'plain text',
      number: 42,
      object: { total: 3, items: ['a'] },
      nothing: undefined,
      result: { content: [{ type: 'text', text: 'already a result' }], isError: false },
      almost: { content: 'not an array' },
    };
    for (const [name, value] of Object.entries(values))
      gateway.registry.register(defineTool({ name, parameters: { type: 'object' }, execute: async () => value }));
    const client = await inMemoryClient(cleanups, gateway);
    const answers: Record<string, unknown> = {};
    for (const name of Object.keys(values)) answers[name] = await client.callTool({ name, arguments: {} });
    expect(answers).toEqual({
      text: { content: [{ type: 'text', text: 'plain text' }] },
      number: { content: [{ type: 'text', text: '42' }] },
      object: { content: [{ type: 'text', text: '{"total":3,"items":["a"]}' }] },
      nothing: { content: [{ type: 'text', text: '' }] },
      result: { content: [{ type: 'text', text: 'already a result' }], isError: false },
      almost: { content: [{ type: 'text', text: '{"content":"not an array"}' }] },
    });
  });
});
