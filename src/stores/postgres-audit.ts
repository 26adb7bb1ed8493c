/**
 * The PostgreSQL audit sink's write queue (`toolgate/postgres`): bounded, written in order by one batched
 * INSERT at a time, drained by `close`. Internal: not exported from an entry point.
 */
import { describe } from '../names.js';
import type { AuditRecord } from './types.js';

/** The most records one INSERT of the audit queue writes. */
const AUDIT_BATCH = 500;

export interface QueuedRecord {
  readonly record: AuditRecord;
  readonly json: string;
  readonly done: () => void;
  readonly failed: (error: unknown) => void;
}

/** The audit's write queue: bounded, written in order by one batch at a time, drained by `close`. */
export class AuditQueue {
  readonly #insert: (records: readonly QueuedRecord[]) => Promise<void>;
  readonly #limit: number;
  #queued: QueuedRecord[] = [];
  #draining: Promise<void> | null = null;
  #closed = false;

  constructor(insert: (records: readonly QueuedRecord[]) => Promise<void>, limit: number) {
    this.#insert = insert;
    this.#limit = limit;
  }

  write(record: AuditRecord): Promise<void> {
    if (this.#closed)
      return Promise.reject(new Error('the PostgreSQL audit sink is closed: the record is not written'));
    let json: string;
    try {
      // Checked now, so that one bad record cannot fail the batch it would be written with.
      if (typeof record?.decision !== 'object' || record.decision === null)
        throw new TypeError(`"decision" is ${describe(record?.decision)}`);
      if (!Number.isFinite(Date.parse(record.time))) throw new TypeError(`"time" is ${describe(record.time)}`);
      json = JSON.stringify(record);
    } catch (error) {
      return Promise.reject(
        new TypeError(
          `an audit record that cannot be written: ${error instanceof Error ? error.message : String(error)}`,
        ),
      );
    }
    if (this.#queued.length >= this.#limit)
      return Promise.reject(
        new Error(`the PostgreSQL audit queue is full (${this.#limit} records waiting): the record is dropped`),
      );
    return new Promise<void>((done, failed) => {
      this.#queued.push({ record, json, done, failed });
      // Started a microtask later, so that the records of one synchronous burst share the first batch.
      this.#draining ??= Promise.resolve().then(() => this.#drain());
    });
  }

  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
  }

  async #drain(): Promise<void> {
    while (this.#queued.length > 0) {
      const batch = this.#queued.splice(0, AUDIT_BATCH);
      try {
        await this.#insert(batch);
        for (const r of batch) r.done();
      } catch (error) {
        for (const r of batch) r.failed(error);
      }
    }
    this.#draining = null;
  }
}

/** The columns of a batch of audit records, as the arrays the INSERT unnests. */
export function columnsOf(batch: readonly QueuedRecord[]): unknown[][] {
  const columns: unknown[][] = [[], [], [], [], [], [], []];
  for (const { record, json } of batch) {
    const d = record.decision;
    columns[0]!.push(record.time);
    columns[1]!.push(d.tenant);
    columns[2]!.push(record.caller);
    columns[3]!.push(d.canonical);
    columns[4]!.push(d.effect);
    columns[5]!.push(d.stage);
    columns[6]!.push(json);
  }
  return columns;
}
