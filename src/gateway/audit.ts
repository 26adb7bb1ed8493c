/**
 * What the gateway records: one JSON object per event, written to an audit sink (a JSONL file for the
 * CLI). `toolgate report` reads these records back.
 */
import { appendFileSync, closeSync, openSync, writeSync } from 'node:fs';
import type { Decision } from '../decision.js';
import { freezeEvent } from '../events.js';
import type { PermissionResult } from '../permissions/result.js';
import type { PermissionPolicy } from '../permissions/policy.js';
import type { ToolRegistry, ToolResult } from '../registry.js';

/** What shadow rules would have decided, where that differs from what was enforced. */
export interface ShadowRecord {
  readonly effect: PermissionResult;
  readonly rule: string | null;
  readonly reason: string;
}

interface RecordBase {
  readonly time: string;
  /** The caller's id (the token subject over HTTP), or null. */
  readonly caller: string | null;
  /** The MCP session, over HTTP. */
  readonly session: string | null;
}

/** A tool call: its Decision, and how it ended. */
export interface ToolAuditRecord extends RecordBase {
  readonly type: 'tool';
  /** The upstream's namespace, or null for a name no upstream serves. */
  readonly upstream: string | null;
  readonly decision: Decision | null;
  /** `ok`/`error`: ran upstream; `refused`: the upstream never saw it; `unavailable`: its upstream is down. */
  readonly status: ToolResult['status'] | 'unavailable';
  /**
   * `unknown`: the call was sent upstream and no answer came back (it timed out): the upstream may have
   * completed it; `reason` says so. Check the upstream before any retry.
   */
  readonly outcome?: 'unknown';
  readonly reason?: string;
  readonly shadow?: ShadowRecord;
  /** The tool's definition drifted from its pin: the unified diff. */
  readonly drift?: string;
  /** From the request reaching the gateway to its answer (decision, approval wait and upstream call). */
  readonly durationMs?: number;
  /** A store-backed approval: its request id and what happened (asked, pending, approved, denied). */
  readonly approval?: {
    readonly id: string;
    readonly state: string;
    readonly reason?: string;
    readonly approver?: string;
  };
  /**
   * A scope-shaped refusal of a 2026-07-28 request: answered HTTP 403 with `WWW-Authenticate: Bearer
   * error="insufficient_scope", scope="…"` (the scopes that would cover the tool).
   */
  readonly stepUp?: { readonly status: 403; readonly scope: string };
  /** The upstream answered the call with a task (the tasks extension): the client got a handle bound to it. */
  readonly task?: { readonly status: string };
}

/** A resource read/subscribe or a prompt get. */
export interface ItemAuditRecord extends RecordBase {
  readonly type: 'resource' | 'prompt';
  readonly action: 'read' | 'subscribe' | 'get' | 'complete';
  readonly upstream: string | null;
  /** The resource URI (normal form) or the prompt name as shown. */
  readonly target: string;
  readonly effect: 'allow' | 'deny';
  /** Whether a person was asked (a rule answered ask). */
  readonly asked: boolean;
  readonly rule: string | null;
  readonly reason: string;
  /** The gate's Decision on the gate-level call (`resource` or `prompt`, its arguments the URI or the prompt's). */
  readonly decision?: Decision;
  /** `ok`/`error`: forwarded upstream; `refused`: the upstream never saw it. */
  readonly status?: ToolResult['status'];
  /** A store-backed or inbox approval: its request id and what happened. */
  readonly approval?: ToolAuditRecord['approval'];
  readonly shadow?: ShadowRecord;
}

/**
 * The policy in force and which of it is in shadow mode: at start, at every reload (`changes` names each
 * change of enforcement), and when a reload is refused (`refused`: the policy named stays in force), or held
 * for a person's approval because it widens access (`held`: the policy named stays in force; `approval` is
 * the request's id, `changes` what widens). A held reload approved is a `reload` record naming the approver.
 */
export interface ModeAuditRecord {
  readonly type: 'mode';
  readonly time: string;
  readonly event: 'start' | 'reload' | 'refused' | 'held';
  /** The version of the policy in force after the event. */
  readonly policy: string;
  readonly mode: 'enforce' | 'shadow';
  /** The names of the rules in shadow mode (tool, resource and prompt rules). */
  readonly shadowRules: readonly string[];
  /** What a drifted tool gets. */
  readonly pin?: 'refuse' | 'ask' | 'off';
  /** What changed since the previous record, in words. */
  readonly changes: readonly string[];
  /** Why a reload was refused. */
  readonly error?: string;
  /** A held reload's approval request (its id in the inbox). */
  readonly approval?: string;
  /** Who approved a held reload (a `reload` record), or denied it (a `refused` record). */
  readonly approver?: string;
}

/**
 * A tool definition pinned for the first time, seen drifted from its pin, or left unpinned (`unpinned`: its upstream
 * holds PINS_PER_UPSTREAM_MAX pins; its calls are refused; once while it stays listed unpinned, `reason` saying why).
 */
export interface PinAuditRecord {
  readonly type: 'pin';
  readonly time: string;
  readonly event: 'pinned' | 'drift' | 'unpinned';
  readonly upstream: string;
  readonly tool: string;
  readonly diff?: string;
  /** `drift`: the sha256 of the definition offered, the one `diff` shows (what an accept of it names). */
  readonly sha256?: string;
  readonly reason?: string;
}

/** An upstream went down or came back. */
export interface UpstreamAuditRecord {
  readonly type: 'upstream';
  readonly time: string;
  readonly upstream: string;
  readonly state: 'ready' | 'down';
  readonly reason?: string;
}

/**
 * A request refused before anything was decided, for what it is on the wire (a 2026-07-28 request whose
 * headers disagree with its body, a version the gateway does not speak, a malformed `_meta`).
 */
export interface ProtocolAuditRecord {
  readonly type: 'protocol';
  readonly time: string;
  /** What was wrong, as the client was told. */
  readonly reason: string;
}

/**
 * An HTTP request refused before anything was decided, for who or where it is: a `Host` not on the
 * allow-list, a token naming no tenant (or two, or an unknown one), an admin call without the admin scope.
 */
export interface AccessAuditRecord {
  readonly type: 'access';
  readonly time: string;
  readonly event: 'refused';
  /** The token's subject, when it was verified. */
  readonly caller: string | null;
  readonly path: string;
  /** The client's address (from a trusted proxy's `X-Forwarded-For`). */
  readonly client: string | null;
  /** What was wrong, as the client was told. */
  readonly reason: string;
}

/** An admin API action (`/admin/…`): who did it, what, and how it ended. */
export interface AdminAuditRecord {
  readonly type: 'admin';
  readonly time: string;
  /** The admin token's subject. */
  readonly by: string;
  readonly action: 'list-upstreams' | 'list-pins' | 'accept-pin' | 'reload' | 'drain';
  readonly ok: boolean;
  /** What happened, or why it was refused. */
  readonly detail: string;
}

/**
 * A request of the tasks extension (tasks/get, tasks/update, tasks/cancel; tasks.ts): `refused` never
 * reached the upstream (a handle malformed, edited or of another principal, caller or tenant).
 */
export interface TaskAuditRecord extends RecordBase {
  readonly type: 'task';
  readonly method: 'tasks/get' | 'tasks/update' | 'tasks/cancel';
  /** The task's upstream, or null when the handle was refused before naming one. */
  readonly upstream: string | null;
  readonly status: 'ok' | 'error' | 'refused';
  readonly reason?: string;
}

/** One audit record of the gateway. */
export type GatewayAuditRecord =
  | TaskAuditRecord
  | ToolAuditRecord
  | ItemAuditRecord
  | ModeAuditRecord
  | PinAuditRecord
  | UpstreamAuditRecord
  | ProtocolAuditRecord
  | AccessAuditRecord
  | AdminAuditRecord;

/** An audit sink: called once per record; a sink that throws is reported and does not stop the gateway. */
export type GatewayAuditSink = (record: GatewayAuditRecord) => void;

/**
 * A JSONL file sink: each record is one line, on a file opened once in append mode. By default each line is
 * written at once with one synchronous `write`, so it is in the file before the call's answer leaves.
 *
 * With `{ after: 'answer' }` (what `toolgate gateway --audit` uses, issue 25.2) a record is held in memory
 * (it is frozen by safeSink: nothing can change it meanwhile) and the lines held are serialised and written
 * with one synchronous `write` on the next tick: after the microtasks that carry the call's answer to its
 * client, in the same turn of the event loop (the gateway never waits for I/O between the record and the
 * write), so the audit is off the request's critical path but for a buffered append. Nothing is lost at
 * exit or close: `flush()` writes what is held at once, and the process's `exit` writes it too. A reader
 * that needs a call's line must wait for it after the answer (the tests' `auditLines`). A failed write is
 * reported (`TOOLGATE_AUDIT`, as ever) and the file is opened again for the next line.
 *
 * A write to the page cache costs a few microseconds; the asynchronous write on libuv's pool an earlier
 * version made woke a pool thread and then the loop again for every record, on a busy machine the larger
 * cost (issue 25.2).
 */
export function jsonlAuditSink(
  file: string,
  options: { readonly after?: 'record' | 'answer' } = {},
): GatewayAuditSink & { readonly flush: () => Promise<void> } {
  appendFileSync(file, '');
  let fd: number | null = null;
  // A write stopped inside a line (a full disk): the next write starts on a new line, so that the torn line
  // stands alone and the next records are whole lines, not glued to its end.
  let torn = false;
  const write = (lines: string): void => {
    const text = torn ? `\n${lines}` : lines;
    const wrote = { bytes: 0 };
    try {
      wrote.bytes = writeSync((fd ??= openSync(file, 'a')), text);
      // A short write (a file-size limit, a full disk): the rest written on; the error that stops it is reported.
      if (wrote.bytes < Buffer.byteLength(text)) writeAll(fd, Buffer.from(text), wrote);
      torn = false;
    } catch (error) {
      if (wrote.bytes > 0) torn = true;
      // Opened again at the next write (the file may have been rotated away).
      if (fd !== null) closeQuietly(fd);
      fd = null;
      reportAudit(error);
    }
  };
  if (options.after !== 'answer') {
    const sink = (record: GatewayAuditRecord): void => write(`${JSON.stringify(record)}\n`);
    return Object.assign(sink, { flush: (): Promise<void> => Promise.resolve() });
  }
  let held: GatewayAuditRecord[] = [];
  const writeHeld = (): void => {
    if (held.length === 0) return;
    const records = held;
    held = [];
    let text = '';
    for (const record of records) {
      try {
        text += `${JSON.stringify(record)}\n`;
      } catch (error) {
        // A record that cannot be serialised is reported, as when the sink wrote it at once; the others go on.
        reportAudit(error);
      }
    }
    if (text !== '') write(text);
  };
  process.on('exit', writeHeld);
  const sink = (record: GatewayAuditRecord): void => {
    if (held.push(record) === 1) process.nextTick(writeHeld);
  };
  return Object.assign(sink, {
    flush: (): Promise<void> => {
      writeHeld();
      return Promise.resolve();
    },
  });
}

/** The second {@link auditTime} formatted last (ms since the epoch / 1000) and its ISO text up to the '.'. */
let timeSecond = Number.NaN;
let timePrefix = '';

/**
 * Now as `new Date().toISOString()` writes it (a record's `time`), without a Date per record: the text up to
 * the second is made once a second, the milliseconds appended (a record per call on the gateway's paths).
 */
export function auditTime(): string {
  const ms = Date.now();
  const second = Math.floor(ms / 1000);
  if (second !== timeSecond) {
    const iso = new Date(second * 1000).toISOString();
    // Only the four-digit years have the 24-character form (±YYYYYY years are rare enough to format each).
    if (iso.length !== 24) return new Date(ms).toISOString();
    timePrefix = iso.slice(0, 20);
    timeSecond = second;
  }
  const fraction = ms - second * 1000;
  return `${timePrefix}${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}Z`;
}

/** A sink's failure, reported as safeSink reports a sink that throws. */
function reportAudit(error: unknown): void {
  process.emitWarning(
    `toolgate: the gateway's audit sink threw: ${error instanceof Error ? error.message : String(error)}`,
    { code: 'TOOLGATE_AUDIT' },
  );
}

/**
 * Writes the rest of `bytes` on `fd` from `done.bytes` on, counting in `done` (a write that writes nothing
 * throws: the line would be lost unsaid).
 */
function writeAll(fd: number, bytes: Buffer, done: { bytes: number }): void {
  while (done.bytes < bytes.length) {
    const wrote = writeSync(fd, bytes, done.bytes);
    if (wrote <= 0) throw new Error('the audit file took no more bytes');
    done.bytes += wrote;
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}

/** What the shadow policy would have decided for a call that reached the policy, where it differs from `enforced`. */
export function shadowOf(
  enforced: PermissionPolicy,
  shadow: PermissionPolicy | null,
  registry: ToolRegistry,
  decision: Decision | null,
): ShadowRecord | undefined {
  if (!shadow || !decision || decision.parameters === null) return undefined;
  if (decision.stage !== 'policy' && decision.stage !== 'handler') return undefined;
  const tool = registry.get(decision.tool);
  if (!tool) return undefined;
  const would = shadow.evaluate(tool, decision.parameters);
  const was = enforced.evaluate(tool, decision.parameters);
  if (would.result === was.result && would.rule?.name === was.rule?.name) return undefined;
  return {
    effect: would.result,
    rule: would.rule?.name ?? null,
    reason:
      would.by === 'rule_error' ? would.error : (would.rule?.reason ?? `the policy's fallback is ${would.result}`),
  };
}

/** The audit sink, made safe: a sink that throws is reported once per record and never stops the gateway. */
export function safeSink(sink: GatewayAuditSink | undefined): (record: GatewayAuditRecord) => void {
  return (record) => {
    if (!sink) return;
    try {
      // Frozen: a sink composed of several (a JSONL file and OTel) cannot change the record for the others.
      sink(freezeEvent(record));
    } catch (error) {
      reportAudit(error);
    }
  };
}
