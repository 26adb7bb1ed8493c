/**
 * A worker process of the plan tests (run with `node --import tsx`): a registry with a policy file's rules and
 * limits, charged on PostgreSQL counters, as a deployment on PostgreSQL alone sets it up. It makes `calls`
 * refunds for each tenant and prints how many ran per tenant.
 */
import { appendFileSync } from 'node:fs';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { parsePolicy } from '../../src/policy-file/load.js';
import { PostgresStores } from '../../src/stores/postgres.js';

interface PlanJob {
  readonly pgUrl: string;
  readonly schema: string;
  readonly policy: string;
  readonly tenants: readonly string[];
  readonly calls: number;
  readonly executions: string;
}

const job = JSON.parse(process.argv[2]!) as PlanJob;
const loaded = parsePolicy(job.policy);
if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
const set = loaded.policy;
const pg = new PostgresStores({ connectionString: job.pgUrl, schema: job.schema });
const registry = new ToolRegistry({ limiter: set.limiter(pg.counters) });
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
for (let i = 0; i < job.calls; i++)
  for (const tenant of job.tenants) {
    const result = await registry.invoke('refund', {}, set.context({ tenant }));
    if (result.status === 'ok') ran[tenant] = (ran[tenant] ?? 0) + 1;
    else stages[result.decision.stage] = (stages[result.decision.stage] ?? 0) + 1;
  }
await pg.close();
console.log(JSON.stringify({ ran, stages }));
