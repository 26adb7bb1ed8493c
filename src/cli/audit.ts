/**
 * `toolgate audit`: search an audit trail — a JSONL file (the gateway's `--audit FILE`), a SQLite database
 * or a PostgreSQL schema written by the stores — by tenant, caller, tool, effect and time. The drivers are
 * loaded only when their option is used.
 */
import type { Command } from 'commander';
import type { AuditQuery, AuditRecord } from '../stores/types.js';
import { UsageError, type Cli } from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';
import { terminalSafe } from './render.js';
import { countOf, timeOf, withStores, type StoreOptions } from './store-options.js';

interface AuditOptions extends StoreOptions {
  readonly tenant?: string;
  readonly caller?: string;
  readonly tool?: string;
  readonly effect?: string;
  readonly since?: string;
  readonly until?: string;
  readonly limit?: string;
  readonly json?: boolean;
}

export function registerAudit(program: Command, cli: Cli): void {
  const command = program
    .command('audit')
    .description(
      'Search the audit trail of decisions (a JSONL file, SQLite or PostgreSQL) by tenant, caller, tool, effect and time.',
    )
    .argument('[file]', "a JSONL audit file (as written by the gateway's --audit)")
    .option('--postgres <url>', 'read the audit table of a PostgreSQL database (postgres://…)')
    .option('--schema <name>', 'the PostgreSQL schema of the stores', 'toolgate')
    .option('--sqlite <file>', 'read the audit table of a SQLite stores file')
    .option('--tenant <id>', 'only this tenant')
    .option('--caller <id>', 'only this caller')
    .option('--tool <name>', 'only this tool (canonical name)')
    .option('--effect <effect>', 'only allow or deny')
    .option('--since <time>', 'from this time on (ISO 8601, or a duration ago: 15m, 24h, 7d)')
    .option('--until <time>', 'before this time (ISO 8601, or a duration ago)')
    .option('--limit <n>', 'at most this many records (the newest)', '100')
    .option('--json', 'print one JSON record per line');
  exitCodes(command, [[EXIT.OK, 'the records were printed (possibly none)'], USAGE_LINE]).action(
    async (file: string | undefined, options: AuditOptions) => {
      const query = queryOf(options);
      let records: AuditRecord[];
      try {
        records = await readAudit(file, options, query);
      } catch (error) {
        if (error instanceof UsageError) throw error;
        throw new UsageError(`cannot read the audit trail: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (options.json) for (const r of records) cli.out(JSON.stringify(r));
      // Names, reasons and arguments come from models and upstreams: escaped for the terminal (JSON stays exact).
      else cli.out(auditText(terminalSafe(records), cli));
      cli.exit(EXIT.OK);
    },
  );
}

function queryOf(options: AuditOptions): AuditQuery {
  if (options.effect !== undefined && options.effect !== 'allow' && options.effect !== 'deny')
    throw new UsageError(`--effect must be allow or deny, got ${JSON.stringify(options.effect)}`);
  return {
    ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
    ...(options.caller !== undefined ? { caller: options.caller } : {}),
    ...(options.tool !== undefined ? { tool: options.tool } : {}),
    ...(options.effect !== undefined ? { effect: options.effect } : {}),
    ...(options.since !== undefined ? { since: timeOf(options.since, '--since') } : {}),
    ...(options.until !== undefined ? { until: timeOf(options.until, '--until') } : {}),
    limit: countOf(options.limit, '--limit', 100),
  };
}

/** The records of the JSONL file, or of the one store the options name. */
async function readAudit(file: string | undefined, options: AuditOptions, query: AuditQuery): Promise<AuditRecord[]> {
  if (file !== undefined && options.postgres === undefined && options.sqlite === undefined) {
    const { JsonlAuditSink } = await import('../stores/audit.js');
    try {
      return await new JsonlAuditSink(file).query(query);
    } catch (error) {
      if (error instanceof TypeError) throw new UsageError(error.message);
      throw error;
    }
  }
  return withStores(options, ({ audit }) => audit!.query(query), { file, files: true, redis: false });
}

function auditText(records: readonly AuditRecord[], cli: Cli): string {
  if (records.length === 0) return 'no matching decisions';
  const { c } = cli;
  return records
    .map((r) => {
      const d = r.decision;
      const effect = d.effect === 'allow' ? c.green('allow') : c.red('deny ');
      const who = [d.tenant && `tenant=${d.tenant}`, r.caller && `caller=${r.caller}`, `agent=${d.agent}`]
        .filter(Boolean)
        .join(' ');
      const where = d.effect === 'deny' ? ` ${d.stage}${d.layer ? `/${d.layer}` : ''}` : '';
      return `${r.time}  ${effect}${where}  ${d.canonical}  ${who}  ${c.dim(d.reason)}`;
    })
    .join('\n');
}
