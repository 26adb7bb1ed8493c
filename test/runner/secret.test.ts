/**
 * The runner's approval secret: a per-process random key on shared stores made every paused run resumable
 * only by the process that paused it (B and C: "signed with another secret"), so an answered approval was lost
 * when A died. Shared stores without `secret` are refused at construction; memory stores share one key.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  AgentRunner,
  ConfigurationError,
  PermissionPolicy,
  RunStateError,
  type Agent,
  type RunState,
} from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import { memoryStores } from '../../src/stores/index.js';
import { PostgresStores } from '../../src/stores/postgres.js';
import { RedisStores } from '../../src/stores/redis.js';
import { SqliteStores } from '../../src/stores/sqlite.js';
import { PG_URL, REDIS_URL, uniqueName } from '../stores/servers.js';
import { ASK_BIG_REFUNDS, shop } from './fixtures.js';

const concierge: Agent = { name: 'concierge', tools: ['refund'] };
const refundTurns = () =>
  new ScriptedModel([{ toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] }, { text: 'done' }]);

function pausing(registry: ReturnType<typeof shop>['registry'], stores?: ReturnType<typeof memoryStores>) {
  return new AgentRunner({
    registry,
    model: refundTurns(),
    handler: () => 'pending',
    ...(stores ? { stores } : {}),
  });
}

describe('AgentRunner without a secret', () => {
  const pg = new PostgresStores({ connectionString: PG_URL, schema: uniqueName('secret') });
  const redis = new RedisStores({ url: REDIS_URL, prefix: uniqueName('secret') });
  afterAll(async () => {
    await pg.close();
    await redis.close();
  });

  it('on PostgreSQL, SQLite or a split with Redis: a ConfigurationError at construction naming the option', async () => {
    const { registry } = shop({ policyVersion: 'v1' });
    const sqlite = new SqliteStores({ filename: ':memory:' });
    for (const stores of [pg, sqlite, { ...memoryStores(), nonces: redis.nonces }]) {
      let thrown: unknown;
      try {
        new AgentRunner({ registry, model: refundTurns(), stores });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ConfigurationError);
      expect((thrown as Error).message).toMatch(/option "secret" is required/);
      expect((thrown as Error).message).toMatch(/process\.env\.TOOLGATE_SECRET/);
    }
    // With a secret, three processes' runners on the same PostgreSQL stores agree (one key, as it should be).
    const secret = 'one-key-for-every-worker-0123456789';
    const [a, b] = [0, 1].map(() => new AgentRunner({ registry, model: refundTurns(), stores: pg, secret }));
    expect(a).toBeInstanceOf(AgentRunner);
    expect(b).toBeInstanceOf(AgentRunner);
    sqlite.close();
  });

  it('two runners on one memoryStores() share its key: a run paused by one resumes on the other', async () => {
    const f = shop({ policyVersion: 'v1' });
    f.registry.setPermissionPolicy(new PermissionPolicy({ version: 'v1', rules: [ASK_BIG_REFUNDS] }));
    const stores = memoryStores();
    const a = pausing(f.registry, stores);
    const paused = await a.run(concierge, 'refund', { tenant: 'acme' });
    if (paused.status !== 'paused') throw new Error(`expected a pause, got ${paused.status}`);
    const state = JSON.parse(JSON.stringify(paused.state)) as RunState;
    // Answered by A, resumed by B (A may be gone).
    const decision = a.answer(paused.pending[0]!, 'allow');
    const b = pausing(f.registry, stores);
    const done = await b.resume(state, [decision]);
    expect(done.status).toBe('completed');
    expect(f.refunds).toEqual([{ order: 'A1', amount: 500 }]);
    // A runner on other memory stores (another process's) has another key: the state is refused, nothing runs.
    await expect(pausing(f.registry, memoryStores()).resume(state, [decision])).rejects.toBeInstanceOf(RunStateError);
    expect(f.refunds).toHaveLength(1);
  });
});
