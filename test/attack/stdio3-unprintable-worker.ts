/**
 * Worker of test/attack/stdio3-unprintable.test.ts: one registry.dispatch of an async tool whose value neither
 * JSON.stringify nor String can show, under Node's default unhandled-rejection mode. Prints the result's status; a
 * process that dies before does not.
 */
import { defineTool, ToolRegistry } from '../../src/index.js';

const registry = new ToolRegistry({ toolTimeoutMs: 300 });
registry.register(
  defineTool({
    name: 'give',
    parameters: { type: 'object' },
    execute: () => Promise.resolve(Object.assign(Object.create(null) as object, { big: 1n })),
  }),
);
void registry.dispatch([{ id: 'c1', name: 'give', arguments: {} }]).then(
  ([result]) => process.stdout.write(`settled ${result!.status}\n`),
  (error: unknown) => process.stdout.write(`rejected ${String(error)}\n`),
);
