/**
 * A worker process of the limit tests (run with `node --import tsx`): a registry with a policy file's rules and
 * limits, charged on PostgreSQL or Redis counters, as a deployment sets it up. It makes `calls` refunds for each
 * tenant — `concurrency` of them at once (a server with requests in flight) — and prints how many ran per
 * tenant and the stages of the refusals.
 */
import { appendFileSync } from 'node:fs';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { parsePolicy } from '../../src/policy-file/load.js';
import type { CounterStore } from '../../src/stores/types.js';

export interface LimitJob {
  readonly backend: 'postgres' | 'redis';
  readonly pgUrl?: string;
  readonly schema?: string;
  readonly redisUrl?: string;
  readonly prefix?: string;
  readonly policy: string;
  readonly tenants: readonly string[];
  readonly calls: number;
  /** @default 1 */
  readonly concurrency?: number;
  readonly executions: string;
}

const job = JSON.parse(process.argv[2]!) as LimitJob;
const loaded = parsePolicy(job.policy);
if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
const set = loaded.policy;
let counters: CounterStore;
let close: () => Promise<void>;
if (job.backend === 'postgres') {
  const { PostgresStores } = await import('../../src/stores/postgres.js');
  const pg = new PostgresStores({ connectionString: job.pgUrl!, schema: job.schema! });
  counters = pg.counters;
  close = () => pg.close();
} else {
  const { RedisStores } = await import('../../src/stores/redis.js');
  const redis = new RedisStores({ url: job.redisUrl!, prefix: job.prefix! });
  counters = redis.counters;
  close = () => redis.close();
}
const registry = new ToolRegistry({ limiter: set.limiter(counters) });
registry.register(
  defineTool({
    name: 'refund',
    parameters: { type: 'object' },
    execute: () => {
      appendFileSync(job.executions, `${process.pid}\n`);
      return 'refunded';
    },
  }),
);
registry.setPermissionPolicy(set.policy);
const ran: Record<string, number> = {};
const stages: Record<string, number> = {};
const queue = Array.from({ length: job.calls }, () => job.tenants).flat();
await Promise.all(
  Array.from({ length: job.concurrency ?? 1 }, async () => {
    for (let tenant = queue.shift(); tenant !== undefined; tenant = queue.shift()) {
      const result = await registry.invoke('refund', {}, set.context({ tenant }));
      if (result.status === 'ok') ran[tenant] = (ran[tenant] ?? 0) + 1;
      else stages[result.decision.stage] = (stages[result.decision.stage] ?? 0) + 1;
    }
  }),
);
await close();
console.log(JSON.stringify({ ran, stages }));
