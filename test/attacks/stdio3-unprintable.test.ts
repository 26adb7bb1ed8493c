/**
 * Attack (c), on every route but the gateway's: a tool's value that neither JSON.stringify nor String can show (a
 * null-prototype object holding a bigint; an object whose toJSON and toString throw). contentOf (execute.ts) calls
 * String(value) again in its catch, outside any try, so `succeeded` throws: a synchronous tool's dispatch rejects
 * (the tool ran; "nothing here throws" is broken), an asynchronous tool's then-callback throws — an unhandled
 * rejection that ends the process under Node's default mode, and the result waits for the tool's deadline. The
 * gateway's lazy content (shownOf) answers a fixed text for the same values. Predates cf5941a (its contentOf is
 * the one of cf5941a^1).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';

const unprintable: [string, () => unknown][] = [
  ['a null-prototype object holding a bigint', () => Object.assign(Object.create(null) as object, { big: 1n })],
  [
    'an object whose toJSON and toString throw',
    () => ({
      toJSON() {
        throw new Error('no JSON');
      },
      toString() {
        throw new Error('no text');
      },
    }),
  ],
];

describe('atk: a value no text can show, on registry.dispatch', () => {
  for (const [what, make] of unprintable)
    for (const async of [false, true])
      it(`settles with a result, never a throw: ${what} (${async ? 'a promise' : 'a plain value'})`, async () => {
        const registry = new ToolRegistry({ toolTimeoutMs: 2_000 });
        registry.register(
          defineTool({
            name: 'give',
            parameters: { type: 'object' },
            execute: () => (async ? Promise.resolve(make()) : make()),
          }),
        );
        let outcome: string;
        try {
          outcome = await Promise.race([
            registry.dispatch([{ id: 'c1', name: 'give', arguments: {} }]).then(([r]) => `settled ${r!.status}`),
            new Promise<string>((resolve) => setTimeout(() => resolve('not settled in 1 s'), 1000)),
          ]);
        } catch (error) {
          outcome = `rejected: ${(error as Error).message}`;
        }
        expect(outcome).toMatch(/^settled (ok|error)$/);
      });

  it('the process outlives an async tool that returns one', () => {
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'stdio3-unprintable-worker.ts')],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect({ status: child.status, stdout: child.stdout }).toMatchObject({
      status: 0,
      stdout: expect.stringMatching(/^settled (ok|error)\n$/),
    });
  });
});
