/**
 * The two eras of MCP and the check that a server keeps to the one it announced. An era is a behaviour
 * family, not a version string (the SDK's word): `legacy` is every revision with the `initialize`
 * handshake, 2024-11-05 through 2025-11-25; `modern` is 2026-07-28, stateless, with `server/discover` and
 * `resultType` on every result. The client learns a server's era once, at connect (discover first, then
 * the 2025-11-25 handshake), and from then on holds the server to it: an answer in the other era's shape
 * is a protocol error, never read as best it can be (a 2025 answer to a 2026 request has no `resultType`,
 * a 2026 `input_required` read by a 2025 client looks like an empty success).
 */
import { randomUUID } from 'node:crypto';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import type { InboundTap } from './transport.js';

/** The 2026-07-28 revision: per-request `_meta`, `server/discover`, multi round-trip requests. */
export const MODERN_VERSION = '2026-07-28';
/** The newest revision with the `initialize` handshake, the one a modern client falls back to. */
export const LEGACY_VERSION = '2025-11-25';

/** `modern` (2026-07-28) or `legacy` (2025-11-25 and older, with `initialize`). */
export type McpEra = 'modern' | 'legacy';

/** A server that answered in an era it did not announce. */
export interface EraViolation {
  /** The era the server announced at connect. */
  readonly era: McpEra;
  /** The protocol version negotiated at connect. */
  readonly version: string;
  /** The method of the request the answer was for, or of the request the server sent. */
  readonly method: string | undefined;
  /** What was wrong, in a sentence that names it. */
  readonly detail: string;
}

/** Hears of a violation (the answer was refused either way). */
export type McpEraViolationListener = (violation: EraViolation) => void;

/** The JSON-RPC code of the error the refused answer is replaced with: the answer could not be used. */
export const ERA_VIOLATION_CODE = -32603;

/** The tasks extension's name (SEP-2663), in capabilities' `extensions`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** `resultType` values of the modern era (the core's; `task` only with the tasks extension declared). */
const CORE_RESULT_TYPES: ReadonlySet<string> = new Set(['complete', 'input_required']);
/** The statuses of a task (SEP-2663). */
export const TASK_STATUSES: ReadonlySet<string> = new Set([
  'working',
  'input_required',
  'completed',
  'cancelled',
  'failed',
]);
/** `resultType` values that only exist in the modern era: a legacy server cannot mean them. */
const MODERN_ONLY_RESULT_TYPES: ReadonlySet<string> = new Set(['input_required', 'task']);

/** What the era check needs to know about the connection, read at every message. */
export interface EraState {
  /** The era and version the server announced; `undefined` while connecting (nothing is checked then). */
  readonly negotiated: { readonly era: McpEra; readonly version: string } | undefined;
}

/**
 * A task an upstream created for a `tools/call` (its `CreateTaskResult`, SEP-2663): the SDK's client has no
 * task runtime, so the era check hands the SDK a complete result carrying it under a key private to this
 * process (an upstream cannot name it), and {@link upstreamTaskOf} reads it back.
 */
export interface UpstreamTask {
  readonly taskId: string;
  readonly status: string;
  /** The whole `CreateTaskResult` as the upstream sent it (`resultType` removed). */
  readonly fields: Readonly<Record<string, unknown>>;
}

/** The `_meta` key a task travels under through the SDK: random per process, never sent anywhere. */
const TASK_MARK = `toolgate.upstream-task/${randomUUID()}`;

/** The task a `tools/call` result carries (see {@link UpstreamTask}), or undefined. */
export function upstreamTaskOf(result: unknown): UpstreamTask | undefined {
  if (result === null || typeof result !== 'object') return undefined;
  const meta = (result as { _meta?: unknown })._meta;
  if (meta === null || typeof meta !== 'object' || !Object.hasOwn(meta, TASK_MARK)) return undefined;
  return (meta as Record<string, UpstreamTask>)[TASK_MARK];
}

/** Why `result` is not a task a client can take (SEP-2663's `Task`), or undefined. */
function taskProblem(result: Record<string, unknown>): string | undefined {
  const id = result['taskId'];
  if (typeof id !== 'string' || id.length === 0 || id.length > 1024)
    return 'a taskId that is not a string of 1 to 1024 characters';
  const status = result['status'];
  if (typeof status !== 'string' || !TASK_STATUSES.has(status))
    return `a task status ${JSON.stringify(status)} the extension does not define`;
  return undefined;
}

/**
 * The inbound check of one connection: every answer is held to the era the server announced. A refused
 * answer is replaced by an error response for the same request (so the call fails with a message that
 * names what was wrong, and nothing is made of the answer); a request the modern era does not have is
 * taken off the wire. `report` hears of each violation (the gateway audits it and reconnects, which
 * probes the server's era again).
 *
 * `requests` names the method of an outbound request by id (for the message) and whether it declared the
 * tasks extension, see {@link trackRequests}: a `resultType: "task"` answer is taken only for a `tools/call`
 * that declared it (SEP-2663: never to a request without it, and only for the methods it supports), and is
 * handed on as a complete result carrying the task ({@link upstreamTaskOf}).
 */
export function eraCheck(
  state: EraState,
  requests: Pick<ReturnType<typeof trackRequests>, 'methodOf' | 'declaredTasks'>,
  report: (violation: EraViolation) => void,
): InboundTap {
  const { methodOf } = requests;
  return (message) => {
    const negotiated = state.negotiated;
    if (!negotiated) return undefined;
    const violation = (method: string | undefined, detail: string): EraViolation => {
      const found = { era: negotiated.era, version: negotiated.version, method, detail };
      report(found);
      return found;
    };
    const body = message as Record<string, unknown>;
    const id = body['id'];
    const hasId = typeof id === 'string' || typeof id === 'number';
    // A request from the server.
    if (hasId && typeof body['method'] === 'string') {
      if (negotiated.era !== 'modern') return undefined;
      violation(
        body['method'],
        `sent a ${JSON.stringify(body['method'])} request, but ${negotiated.version} has no server-to-client requests (they travel in input_required results); it was dropped`,
      );
      return null;
    }
    if (!hasId) return undefined;
    const method = methodOf(id);
    const answered = `answered ${method ?? `request ${JSON.stringify(id)}`}`;
    const result = body['result'];
    if (result !== null && typeof result === 'object') {
      const resultType = (result as Record<string, unknown>)['resultType'];
      if (negotiated.era === 'modern') {
        if (resultType === undefined)
          return refused(
            id,
            violation(method, `${answered} without resultType (a ${LEGACY_VERSION} answer); the answer was not used`),
          );
        if (resultType === 'task' && method === 'tools/call' && requests.declaredTasks(id)) {
          const { resultType: _type, ...fields } = result as Record<string, unknown>;
          const problem = taskProblem(fields);
          if (problem !== undefined)
            return refused(
              id,
              violation(method, `${answered} with a task carrying ${problem}; the answer was not used`),
            );
          const task: UpstreamTask = {
            taskId: fields['taskId'] as string,
            status: fields['status'] as string,
            fields,
          };
          // isError: an SDK that checks a tool's output schema lets an error result through unchecked, and a
          // result whose mark were ever lost would still read as a failure, never as a success.
          return {
            jsonrpc: '2.0',
            id,
            result: {
              resultType: 'complete',
              isError: true,
              content: [{ type: 'text', text: 'toolgate: an upstream task, never shown to a client as is' }],
              _meta: { [TASK_MARK]: task },
            },
          } as JSONRPCMessage;
        }
        const allowed = typeof resultType === 'string' && CORE_RESULT_TYPES.has(resultType);
        if (!allowed)
          return refused(
            id,
            violation(
              method,
              `${answered} with resultType ${JSON.stringify(resultType)}, which this client cannot take in ${negotiated.version}; the answer was not used`,
            ),
          );
        return undefined;
      }
      if (typeof resultType === 'string' && MODERN_ONLY_RESULT_TYPES.has(resultType))
        return refused(
          id,
          violation(
            method,
            `${answered} with resultType ${JSON.stringify(resultType)}, which only exists in ${MODERN_VERSION}; the answer was not used`,
          ),
        );
      return undefined;
    }
    const error = body['error'];
    if (negotiated.era === 'modern' && error !== null && typeof error === 'object') {
      if ((error as Record<string, unknown>)['code'] === -32022)
        return refused(
          id,
          violation(
            method,
            `refused ${negotiated.version} on ${method ?? `request ${JSON.stringify(id)}`} as an unsupported protocol version, although server/discover announced it`,
          ),
        );
    }
    return undefined;
  };
}

function refused(id: string | number, violation: EraViolation): JSONRPCMessage {
  return {
    jsonrpc: '2.0',
    id,
    error: { code: ERA_VIOLATION_CODE, message: eraViolationMessage(violation), data: { eraViolation: violation } },
  };
}

/** The message of a violation: what the server announced, and what it did then. */
export function eraViolationMessage(violation: EraViolation): string {
  return `protocol error: the server announced ${violation.version} (${violation.era} era) at connect, then ${violation.detail}`;
}

/**
 * Remembers the method of each request the client sends, by id, until its answer comes (so a refusal can
 * name the method). Returns the look-up and the outbound hook.
 */
export function trackRequests(): {
  readonly methodOf: (id: string | number) => string | undefined;
  /** Whether the request declared the tasks extension in its own `_meta` capabilities. */
  readonly declaredTasks: (id: string | number) => boolean;
  readonly outbound: (message: JSONRPCMessage) => void;
  readonly answered: (message: JSONRPCMessage) => void;
} {
  const methods = new Map<string | number, { method: string; tasks: boolean }>();
  return {
    methodOf: (id) => methods.get(id)?.method,
    declaredTasks: (id) => methods.get(id)?.tasks === true,
    outbound: (message) => {
      const body = message as Record<string, unknown>;
      const id = body['id'];
      if ((typeof id === 'string' || typeof id === 'number') && typeof body['method'] === 'string')
        methods.set(id, { method: body['method'], tasks: declaresTasks(body['params']) });
    },
    answered: (message) => {
      const body = message as Record<string, unknown>;
      const id = body['id'];
      if ((typeof id === 'string' || typeof id === 'number') && !('method' in body)) methods.delete(id);
    },
  };
}

/** Whether request params declare the tasks extension in their `_meta` client capabilities. */
export function declaresTasks(params: unknown): boolean {
  const meta = (params as { _meta?: unknown } | null | undefined)?._meta as Record<string, unknown> | undefined;
  const capabilities = meta?.['io.modelcontextprotocol/clientCapabilities'] as { extensions?: unknown } | undefined;
  const extension = (capabilities?.extensions as Record<string, unknown> | undefined)?.[TASKS_EXTENSION];
  return extension !== null && typeof extension === 'object' && !Array.isArray(extension);
}
