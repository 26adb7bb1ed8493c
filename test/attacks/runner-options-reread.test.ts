/**
 * Attack on 5a645f6 (issue 25): `runnerSecret`'s new "own stores" flag reads `options.stores` / `options.approvals`
 * again after the stores were taken. An options object whose `stores` getter answers shared stores once and
 * `undefined` after is run on those shared stores but takes the random key of a runner's own memory stores:
 * the ConfigurationError that guards shared stores without a `secret` (a paused run resumable nowhere else, an
 * answered approval lost with this process) is skipped. Before 5a645f6 it was thrown (the key came from the
 * stores taken). Fix: read `options.stores` and `options.approvals` once in runnerSettings and decide `own`
 * from those values (own = both undefined).
 */
import { expect, it } from 'vitest';
import { AgentRunner, ConfigurationError, ToolRegistry } from '../../src/index.js';
import { SqliteStores } from '../../src/stores/sqlite.js';

it('shared stores without a secret are refused however often the options are read', () => {
  // The getter answers the shared stores for its first `k` reads, then undefined: for every k, either the
  // runner did not take those stores (its own memory stores instead) or the missing secret is refused.
  const bypassed: string[] = [];
  for (const option of ['stores', 'approvals'] as const) {
    for (let k = 1; k <= 8; k++) {
      const sqlite = new SqliteStores({ filename: ':memory:' });
      let taken = false;
      const shared = new Proxy(sqlite, {
        get(target, key) {
          if (key === 'ledger') taken = true;
          return Reflect.get(target, key, target) as unknown;
        },
      });
      let reads = 0;
      const options = {
        registry: new ToolRegistry(),
        model: { generate: () => ({ text: 'done' }) },
        get [option]() {
          return reads++ < k ? shared : undefined;
        },
      };
      let thrown: unknown = null;
      try {
        new AgentRunner(options as unknown as ConstructorParameters<typeof AgentRunner>[0]);
      } catch (error) {
        thrown = error;
      }
      sqlite.close();
      if (taken && !(thrown instanceof ConfigurationError)) bypassed.push(`${option}, k=${k}`);
    }
  }
  expect(bypassed).toEqual([]);
});
