/**
 * A server that becomes unreachable mid-run: calls that need it are refused (fail closed), nothing is lost,
 * and the gate recovers when it is back. Unreachability is simulated with a local TCP proxy the test owns
 * (the shared servers keep running): `cut()` drops every connection and refuses new ones, `restore()` listens
 * again on the same port.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentRunner, defineTool, PermissionPolicy, PermissionResult, ToolRegistry } from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import type { RunResult } from '../../src/index.js';
import { Limiter } from '../../src/limits/limiter.js';
import { PostgresStores } from '../../src/stores/postgres.js';
import { RedisStores } from '../../src/stores/redis.js';
import { Proxy, uniqueName } from './servers.js';

describe('a server unreachable mid-run', () => {
  const pgProxy = new Proxy(5432);
  const redisProxy = new Proxy(6379);
  let pg: PostgresStores;
  let redis: RedisStores;
  const schema = uniqueName('down');
  const prefix = uniqueName('down');

  beforeAll(async () => {
    await pgProxy.restore();
    await redisProxy.restore();
    pg = new PostgresStores({
      connectionString: `postgres://postgres@127.0.0.1:${pgProxy.port}/test`,
      schema,
      connectionTimeoutMs: 1000,
    });
    await pg.migrate();
    redis = new RedisStores({ url: `redis://127.0.0.1:${redisProxy.port}`, prefix, commandTimeoutMs: 500 });
  });

  afterAll(async () => {
    await pgProxy.restore().catch(() => undefined);
    await redisProxy.restore().catch(() => undefined);
    await pg.dropSchema();
    await pg.close();
    await redis.clear(prefix);
    await redis.close();
  });

  it('Redis down: limited calls are refused, spend nothing, and go through again when it is back', async () => {
    const limiter = new Limiter({
      counters: redis.counters,
      prefix,
      limits: [{ name: 'calls', per: ['tenant'], max: 3, window: '1h' }],
    });
    const call = { tenant: 'acme', caller: 'alice', agent: 'a', runId: null, tool: 'refund', tags: [] };
    expect((await limiter.charge(call)).allowed).toBe(true);
    await redisProxy.cut();
    for (let i = 0; i < 3; i++) {
      const verdict = await limiter.charge(call);
      // Its own stage, naming the store; no limit is named (none was found full).
      expect(verdict).toMatchObject({ allowed: false, stage: 'store', store: redis.counters.name, counter: null });
      expect(verdict).not.toHaveProperty('limit');
      expect(!verdict.allowed && verdict.reason).toMatch(/could not be checked.*counter store \(redis 127\.0\.0\.1:/);
    }
    // Through a registry (the README's route): the call is refused at stage store and does not run.
    const registry = new ToolRegistry({ limiter });
    let ran = 0;
    registry.register(defineTool({ name: 'refund', parameters: { type: 'object' }, execute: () => ++ran }));
    const refused = await registry.invoke('refund', {}, { tenant: { id: 'acme' } });
    expect(refused.decision).toMatchObject({ effect: 'deny', stage: 'store', by: 'store' });
    expect(refused.content).toContain('No limit was found full');
    expect(ran).toBe(0);
    await redisProxy.restore();
    // Recovers (the client reconnects on its own); the refused attempts spent nothing: two slots are left.
    await expect.poll(async () => (await limiter.charge(call)).allowed, { timeout: 10_000, interval: 200 }).toBe(true);
    expect((await limiter.charge(call)).allowed).toBe(true);
    expect((await limiter.charge(call)).allowed).toBe(false);
  }, 30_000);

  it('PostgreSQL down: the approved call is not run, the approval is not spent, and it runs once when the server is back', async () => {
    const executed: string[] = [];
    const make = () => {
      const registry = new ToolRegistry({ handlerTimeoutMs: 2000 });
      registry.register(
        defineTool({
          name: 'refund',
          description: 'Refund an order',
          parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
          execute: (args) => {
            executed.push(String(args['order']));
            return 'refunded';
          },
        }),
      );
      registry.setPermissionPolicy(
        new PermissionPolicy({
          version: 'v1',
          rules: [{ name: 'ask', tools: ['refund'], result: PermissionResult.ASK, reason: 'a person decides' }],
        }),
      );
      return new AgentRunner({
        registry,
        model: new ScriptedModel([{ toolCalls: [{ name: 'refund', arguments: { order: 'A1' } }] }, { text: 'done' }]),
        stores: pg,
        secret: 'unreachable-test-secret-0123456789',
        handler: () => 'pending',
      });
    };
    const first = make();
    const paused = await first.run({ name: 'clerk', tools: ['refund'] }, 'refund A1');
    if (paused.status !== 'paused') throw new Error(`expected a pause, got ${paused.status}`);
    const decision = first.answer(paused.pending[0]!, 'allow');

    await pgProxy.cut();
    let down: RunResult | Error;
    try {
      down = await make().resume(paused.state, [decision]);
    } catch (error) {
      down = error as Error;
    }
    // Fail closed: whatever the runner reports, nothing ran.
    expect(down instanceof Error || down.status !== 'completed').toBe(true);
    expect(executed).toEqual([]);

    await pgProxy.restore();
    // Nothing lost: the same state and the same approval resume once the server is back.
    let back: RunResult | null = null;
    await expect
      .poll(
        async () => {
          try {
            back = await make().resume(paused.state, [decision]);
            return back.status;
          } catch {
            return 'error';
          }
        },
        { timeout: 10_000, interval: 250 },
      )
      .toBe('completed');
    expect(executed).toEqual(['A1']);
    expect(back).not.toBeNull();
  }, 30_000);
});
