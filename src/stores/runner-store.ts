/**
 * The AgentRunner's store (`approvals` option) built from the shared stores: remembered answers, used nonces
 * and the ledger live wherever the given stores keep them (memory, SQLite, PostgreSQL, Redis), so a run
 * paused on one worker resumes on another and an approved call runs once across all of them.
 *
 * The runner's `claim` is the ledger's `reserve`: a call that is `held` by another worker or `unknown` (its
 * worker died between reservation and record) is answered "outcome unknown" and never run again.
 */
import { randomUUID } from 'node:crypto';
import type { ApprovalStore as RunnerStore, LedgerEntry as RunnerLedgerEntry } from '../runner/approval-store.js';
import { describe } from '../names.js';
import { requireNumber } from './shared.js';
import type {
  Ledger,
  LedgerOutcome,
  LedgerReservation,
  NonceStore,
  RememberStore,
  RememberedAnswer,
  TallyStore,
} from './types.js';

/** Options of {@link runnerStore}. */
export interface RunnerStoreOptions {
  readonly remembered: RememberStore;
  readonly nonces: NonceStore;
  readonly ledger: Ledger;
  /** Runs' budget tallies. */
  readonly tallies: TallyStore;
  /** How long a used decision nonce is remembered. @default 30 days */
  readonly nonceTtlMs?: number;
  /** How long a reservation is `held` before it reads as `unknown`. @default 600_000 (10 min) */
  readonly leaseMs?: number;
  /** This worker's id in ledger rows. @default a random UUID per store */
  readonly owner?: string;
}

/**
 * An AgentRunner store over the shared stores (PostgreSQL has all four; SQLite and memory too; with Redis,
 * take `nonces` from it and the rest from PostgreSQL).
 *
 * @example
 * const pg = new PostgresStores({ connectionString });
 * const runner = new AgentRunner({ registry, model, secret, approvals: runnerStore(pg) });
 */
export function runnerStore(options: RunnerStoreOptions): RunnerStore {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`runnerStore expects { remembered, nonces, ledger, tallies }, got ${describe(options)}`);
  const { remembered, nonces, ledger, tallies } = options;
  for (const [name, store, method] of [
    ['remembered', remembered, 'recall'],
    ['nonces', nonces, 'consume'],
    ['ledger', ledger, 'reserve'],
    ['tallies', tallies, 'spend'],
  ] as const)
    if (
      typeof store !== 'object' ||
      store === null ||
      typeof (store as unknown as Record<string, unknown>)[method] !== 'function'
    )
      throw new TypeError(`runnerStore option "${name}" must be a store with ${method}(), got ${describe(store)}`);
  const nonceTtl = options.nonceTtlMs ?? 30 * 86_400_000;
  requireNumber(nonceTtl, 'runnerStore option "nonceTtlMs"', 1);
  const lease = options.leaseMs ?? 600_000;
  requireNumber(lease, 'runnerStore option "leaseMs"');
  const owner = options.owner ?? randomUUID();
  const entryOf = (r: LedgerReservation): RunnerLedgerEntry | null =>
    r.state === 'reserved' ? null : r.state === 'settled' ? { settled: true, outcome: r.outcome } : { settled: false };
  return {
    recall: (key: string): Promise<RememberedAnswer | undefined> => remembered.recall(key),
    remember: (key: string, answer: RememberedAnswer): Promise<void> => remembered.remember(key, answer),
    consume: (nonce: string): Promise<boolean> => nonces.consume(nonce, nonceTtl),
    async entry(key: string): Promise<RunnerLedgerEntry | undefined> {
      const row = await ledger.inspect(key);
      if (!row) return undefined;
      return row.outcome ? { settled: true, outcome: row.outcome } : { settled: false };
    },
    async claim(key: string): Promise<RunnerLedgerEntry | null> {
      return entryOf(await ledger.reserve(key, owner, lease));
    },
    spend: (run, add, caps, floor) => tallies.spend(run, add, caps, floor),
    async record(key: string, outcome: LedgerOutcome): Promise<void> {
      if (await ledger.record(key, owner, outcome)) return;
      // A delegation claimed by an earlier continuation of this run (another worker) and finished here: the
      // runner settles only what its run claimed, so the row's own owner is recorded.
      const row = await ledger.inspect(key);
      if (row && row.recordedAt === null) await ledger.record(key, row.owner, outcome);
    },
  };
}
