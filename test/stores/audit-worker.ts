/**
 * A worker process for the audit tests (run with `node --import tsx`): a registry audited into PostgreSQL with
 * `auditRegistry`, as the README sets it up. It makes `calls` calls at once, closes the stores without waiting
 * for anything else, prints the call ids in the order their Decisions were announced, and exits.
 */
import { defineTool, ToolRegistry } from '../../src/index.js';
import { auditRegistry } from '../../src/stores/audit.js';
import { PostgresStores } from '../../src/stores/postgres.js';

interface AuditJob {
  readonly pgUrl: string;
  readonly schema: string;
  readonly calls: number;
  readonly label: string;
}

const job = JSON.parse(process.argv[2]!) as AuditJob;
const pg = new PostgresStores({ connectionString: job.pgUrl, schema: job.schema });
const registry = new ToolRegistry();
registry.register(defineTool({ name: 'echo', parameters: { type: 'object' }, execute: async () => 'ok' }));
auditRegistry(registry, pg.audit);
const announced: string[] = [];
registry.onChange((event) => {
  if (event.type === 'tool_decided') announced.push(event.decision.callId);
});
await Promise.all(
  Array.from({ length: job.calls }, (_, i) =>
    registry.executeToolCalls([{ id: `${job.label}-${i}`, name: 'echo', arguments: {} }], { tenant: { id: 'acme' } }),
  ),
);
await pg.close();
console.log(JSON.stringify({ announced }));
