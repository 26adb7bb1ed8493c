/**
 * `toolgate ledger`: the operator's view of the execution ledger (docs/stores.md). `list --unknown` finds the
 * calls a crashed worker left reserved and never recorded — they may have run, and are never run again — and
 * `settle KEY --outcome ran|not-run --by NAME` records what the operator found out: the row gets that
 * outcome (the model is answered with it from then on) with the settlement beside it (who, when, the note),
 * and with `--audit FILE` a `ledger` record is appended to the JSONL audit trail. On SQLite, PostgreSQL and
 * Redis; the same as library calls: `Ledger.list(query)` and `Ledger.settle(key, settlement)`.
 */
import { appendFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { LedgerEntry, LedgerSettlement } from '../stores/types.js';
import { UsageError, type Cli } from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';
import { table, terminalSafe } from './render.js';
import { countOf, storeOptions, timeOf, withStores, type StoreOptions } from './store-options.js';

interface ListOptions extends StoreOptions {
  readonly unknown?: boolean;
  readonly since?: string;
  readonly limit?: string;
  readonly json?: boolean;
}

interface SettleOptions extends StoreOptions {
  readonly outcome?: string;
  readonly by?: string;
  readonly note?: string;
  readonly audit?: string;
  readonly json?: boolean;
}

/** What `toolgate ledger settle --audit FILE` appends: one JSON line, beside the gateway's records. */
export interface LedgerAuditRecord {
  readonly type: 'ledger';
  readonly time: string;
  readonly event: 'settled';
  readonly key: string;
  readonly outcome: LedgerSettlement['outcome'];
  readonly by: string;
  readonly note: string | null;
  /** The worker that reserved the call and never recorded it, and when. */
  readonly owner: string;
  readonly reservedAt: string;
}

const CHOICES = { files: false, redis: true } as const;

export function registerLedger(program: Command, cli: Cli): void {
  const ledger = program
    .command('ledger')
    .description(
      'The execution ledger: list the calls a crashed worker left unknown (they may have run) and settle them.',
    );
  exitCodes(ledger, [
    [EXIT.OK, 'list: the rows were printed; settle: the row was settled'],
    [EXIT.POLICY, 'settle: nothing was changed (the row is absent, recorded already, or still held)'],
    USAGE_LINE,
  ]);

  const list = storeOptions(
    ledger
      .command('list')
      .description('List ledger rows, oldest reservation first: with --unknown, the ones an operator must settle.')
      .option('--unknown', 'only rows reserved, never recorded, whose lease has passed (the call may have run)')
      .option('--since <time>', 'reserved from this time on (ISO 8601, or a duration ago: 15m, 24h, 7d)')
      .option('--limit <n>', 'at most this many rows (the oldest)', '100')
      .option('--json', 'print one JSON row per line'),
    true,
  );
  exitCodes(list, [[EXIT.OK, 'the rows were printed (possibly none)'], USAGE_LINE]).action(
    async (options: ListOptions) => {
      const query = {
        unknown: options.unknown === true,
        ...(options.since !== undefined ? { since: timeOf(options.since, '--since') } : {}),
        limit: countOf(options.limit, '--limit', 100),
      };
      const rows = await withStores(options, ({ ledger: l }) => l.list(query), CHOICES);
      if (options.json) for (const r of rows) cli.out(JSON.stringify(r));
      // Keys hold the model's call ids: escaped for the terminal (JSON stays exact).
      else cli.out(rowsText(terminalSafe(rows), cli));
      cli.exit(EXIT.OK);
    },
  );

  const settle = storeOptions(
    ledger
      .command('settle')
      .description(
        'Settle a row that reads as unknown: record whether the call ran, and who says so. It is never run again.',
      )
      .argument('<key>', 'the ledger key, as `ledger list` prints it')
      .option('--outcome <outcome>', 'ran (its effect happened) or not-run (it did not)')
      .option('--by <name>', 'who settles it (recorded with the row)')
      .option('--note <text>', 'what was checked (recorded; the model reads it too)')
      .option('--audit <file>', 'also append a ledger record to this JSONL audit file')
      .option('--json', 'print the settled row as JSON'),
    true,
  );
  exitCodes(settle, [
    [EXIT.OK, 'the row was settled'],
    [EXIT.POLICY, 'nothing was changed: the row is absent, recorded already, or still held by a live worker'],
    USAGE_LINE,
  ]).action(async (key: string, options: SettleOptions) => {
    if (options.outcome !== 'ran' && options.outcome !== 'not-run')
      throw new UsageError(`--outcome must be ran or not-run, got ${JSON.stringify(options.outcome ?? null)}`);
    if (options.by === undefined || options.by.trim() === '')
      throw new UsageError('--by <name> is required: who settles the call is recorded with it');
    const settlement: LedgerSettlement = {
      outcome: options.outcome,
      by: options.by,
      ...(options.note !== undefined ? { note: options.note } : {}),
    };
    const { done, row } = await withStores(
      options,
      async ({ ledger: l }) => {
        const before = await l.inspect(key);
        const settled = before !== undefined && (await l.settle(key, settlement));
        return { done: settled, row: settled ? await l.inspect(key) : before, before };
      },
      CHOICES,
    );
    const shown = terminalSafe(key);
    if (!done) {
      cli.err(
        `${cli.c.red('not settled')} ${shown}: ${row === undefined ? 'there is no such row' : whyNot(row)}; nothing was changed`,
      );
      cli.exit(EXIT.POLICY);
      return;
    }
    if (options.audit !== undefined) {
      const record: LedgerAuditRecord = {
        type: 'ledger',
        time: new Date().toISOString(),
        event: 'settled',
        key,
        outcome: settlement.outcome,
        by: settlement.by,
        note: settlement.note ?? null,
        owner: row!.owner,
        reservedAt: new Date(row!.reservedAt).toISOString(),
      };
      appendFileSync(options.audit, `${JSON.stringify(record)}\n`);
    }
    if (options.json) cli.out(JSON.stringify(row));
    else cli.out(`settled ${shown}: ${settlement.outcome} (by ${terminalSafe(settlement.by)}); it is never run again`);
    cli.exit(EXIT.OK);
  });
}

/** Why a row cannot be settled. */
function whyNot(row: LedgerEntry): string {
  if (row.settlement)
    return `it was settled already (${row.settlement.outcome}, by ${terminalSafe(row.settlement.by)})`;
  if (row.recordedAt !== null) return 'its worker recorded the outcome';
  return `its worker (${terminalSafe(row.owner)}) still holds it until ${new Date(row.leaseUntil).toISOString()}: it may be running`;
}

function stateOf(row: LedgerEntry, now: number): string {
  if (row.settlement) return `settled ${row.settlement.outcome} by ${row.settlement.by}`;
  if (row.recordedAt !== null) return row.outcome ? 'recorded' : 'recorded (unreadable: reads as unknown)';
  return now < row.leaseUntil ? 'held' : 'unknown';
}

function rowsText(rows: readonly LedgerEntry[], cli: Cli): string {
  if (rows.length === 0) return 'no matching ledger rows';
  const now = Date.now();
  return table(
    rows.map((r) => {
      const state = stateOf(r, now);
      return [
        r.key,
        state === 'unknown' ? cli.c.red(state) : state,
        r.owner,
        new Date(r.reservedAt).toISOString(),
        new Date(r.leaseUntil).toISOString(),
      ];
    }),
    ['key', 'state', 'owner', 'reserved', 'lease until'],
    cli.c,
  );
}
