/**
 * Audit sinks without a server: a JSONL file (one record per line, the format the MCP gateway writes) that
 * `toolgate audit` can search, and a fan-out that writes one record to several sinks. A sink that throws or
 * rejects is reported (a process warning, code `TOOLGATE_AUDIT`) and never changes a decision.
 */
import { appendFileSync, createReadStream, existsSync } from 'node:fs';
import { freezeEvent } from '../events.js';
import { parseJsonText } from '../json-text.js';
import { linesOf } from '../lines.js';
import { describe } from '../names.js';
import type { ToolRegistry } from '../registry.js';
import { auditBounds, auditMatches } from './shared.js';
import type { AuditQuery, AuditReader, AuditRecord, AuditSink } from './types.js';

/**
 * Appends every record to a JSONL file, synchronously (a record is on disk before the call's result is
 * returned), and reads it back for `toolgate audit`.
 *
 * @example
 * const audit = new JsonlAuditSink('audit.jsonl');
 */
export class JsonlAuditSink implements AuditSink, AuditReader {
  readonly file: string;

  constructor(file: string) {
    if (typeof file !== 'string' || file.length === 0)
      throw new TypeError(`JsonlAuditSink expects a file name, got ${describe(file)}`);
    this.file = file;
  }

  write(record: AuditRecord): void {
    appendFileSync(this.file, `${JSON.stringify(record)}\n`);
  }

  async query(query?: AuditQuery): Promise<AuditRecord[]> {
    return queryJsonl(this.file, query);
  }
}

/**
 * The records of a JSONL audit file that match `query` (the last `limit` of them, oldest first). Lines that
 * are not audit records (blank, torn by a crash, another format) are skipped.
 */
export async function queryJsonl(file: string, query?: AuditQuery): Promise<AuditRecord[]> {
  const bounds = auditBounds(query);
  if (!existsSync(file)) throw new Error(`no audit file at ${file}`);
  const out: AuditRecord[] = [];
  // Split at LF only (src/lines.ts): node:readline also splits at U+2028 and U+2029 from Node 24, which
  // JSON.stringify leaves unescaped: a record whose arguments held one was skipped, a call hidden from its readers.
  for await (const line of linesOf(createReadStream(file))) {
    if (line.trim() === '') continue;
    let record: AuditRecord;
    try {
      record = parseJsonText(line) as AuditRecord;
    } catch {
      continue;
    }
    if (
      typeof record !== 'object' ||
      record === null ||
      typeof record.decision !== 'object' ||
      record.decision === null
    )
      continue;
    if (!auditMatches(record, bounds)) continue;
    out.push(record);
    if (out.length > bounds.limit) out.shift();
  }
  return out;
}

/** Writes each record to every sink; one sink's failure is reported and does not stop the others. */
export function fanOut(...sinks: readonly AuditSink[]): AuditSink {
  for (const [i, sink] of sinks.entries())
    if (typeof sink !== 'object' || sink === null || typeof sink.write !== 'function')
      throw new TypeError(`fanOut: sink ${i} must be an AuditSink, got ${describe(sink)}`);
  return {
    write(record: AuditRecord): Promise<void> {
      // One record, several sinks: frozen, so an earlier sink cannot change what a later one writes.
      freezeEvent(record);
      return Promise.all(sinks.map((sink) => writeAudit(sink, record))).then(() => undefined);
    },
  };
}

/** Writes one record; never throws or rejects: a failure becomes a process warning. */
export async function writeAudit(sink: AuditSink, record: AuditRecord): Promise<void> {
  try {
    await sink.write(record);
  } catch (error) {
    process.emitWarning(
      `toolgate: an audit sink failed: ${error instanceof Error ? error.message : String(error)} (call ${record.decision.callId})`,
      { code: 'TOOLGATE_AUDIT' },
    );
  }
}

/** Options of {@link auditRegistry}. */
export interface AuditRegistryOptions {
  /** Recorded as the records' `route`. @default 'registry' */
  readonly route?: string;
  /**
   * At most this many writes wait for the sink at once; a Decision announced while that many wait is not
   * recorded, and a `TOOLGATE_AUDIT` warning says so (a sink slower than the calls cannot grow the process
   * without bound). @default 10_000
   */
  readonly maxPending?: number;
}

/** What {@link auditRegistry} returns: call it to stop recording; `flush` / `close` wait for the writes. */
export interface AuditSubscription {
  /** Stops recording (writes already handed to the sink go on). */
  (): void;
  /** Resolves when every write handed to the sink so far has ended (written, or reported as failed). */
  flush(): Promise<void>;
  /** Stops recording, then flushes. */
  close(): Promise<void>;
}

/**
 * Writes every Decision a registry announces (its `tool_decided` events: every route through it) to `sink`,
 * in the order they are announced (a sink that writes asynchronously must keep that order, as the
 * PostgreSQL sink does). The write is not awaited by the call: a decision never waits for its record. Returns
 * the unsubscribe function, with `flush()` and `close()` to wait for the writes before a process exits. The
 * caller is not part of a Decision: routes that know it (the gateway) write their own records.
 *
 * @example
 * const audit = auditRegistry(registry, fanOut(new JsonlAuditSink('audit.jsonl'), otelAuditSink()));
 * // … on shutdown:
 * await audit.close();
 */
export function auditRegistry(
  registry: ToolRegistry,
  sink: AuditSink,
  options: AuditRegistryOptions = {},
): AuditSubscription {
  if (typeof sink !== 'object' || sink === null || typeof sink.write !== 'function')
    throw new TypeError(`auditRegistry expects an AuditSink, got ${describe(sink)}`);
  const route = options.route ?? 'registry';
  const maxPending = options.maxPending ?? 10_000;
  if (typeof maxPending !== 'number' || !Number.isInteger(maxPending) || maxPending < 1)
    throw new TypeError(`auditRegistry option "maxPending" must be a whole number >= 1, got ${describe(maxPending)}`);
  const pending = new Set<Promise<void>>();
  let dropped = 0;
  const stop = registry.onChange((event) => {
    if (event.type !== 'tool_decided') return;
    if (pending.size >= maxPending) {
      dropped++;
      // One warning per power of two dropped, so a long outage does not flood the log.
      if ((dropped & (dropped - 1)) === 0)
        process.emitWarning(
          `toolgate: ${dropped} audit record(s) dropped: ${maxPending} writes are waiting for the sink (call ${event.decision.callId})`,
          { code: 'TOOLGATE_AUDIT' },
        );
      return;
    }
    const write = writeAudit(sink, {
      time: new Date().toISOString(),
      route,
      caller: null,
      session: null,
      decision: event.decision,
      status: null,
    });
    pending.add(write);
    void write.then(() => pending.delete(write));
  });
  const flush = async (): Promise<void> => {
    while (pending.size > 0) await Promise.all([...pending]);
  };
  return Object.assign(() => stop(), {
    flush,
    close: async () => {
      stop();
      await flush();
    },
  });
}
