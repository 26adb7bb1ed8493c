/**
 * Worker of test/attack/stdio3-mark.test.ts: one gateway call of an async tool in a process whose Object.prototype
 * holds `value` (left by a merge of untrusted JSON), under Node's default unhandled-rejection mode. Prints the
 * result's status; a process that dies before does not.
 */
import { readCall } from '../../src/formats/index.js';
import { dispatchCalls, gatewayCall, type ToolResult } from '../../src/gate/index.js';
import { defineTool, ToolRegistry } from '../../src/index.js';

const registry = new ToolRegistry({ toolTimeoutMs: 300 });
registry.register(
  defineTool({ name: 'give', parameters: { type: 'object' }, execute: () => Promise.resolve({ n: 1 }) }),
);
(Object.prototype as Record<string, unknown>)['value'] = 1;
void dispatchCalls([readCall({ id: 'c1', name: 'give', arguments: {} })], gatewayCall({ agent: 'a' }), registry, {
  name: 'gateway',
  grouped: false,
}).then(([result]) => {
  process.stdout.write(`settled ${(result as ToolResult).status}\n`);
});
