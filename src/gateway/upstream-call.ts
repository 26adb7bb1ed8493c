/**
 * What one `tools/call` of the gateway's client to its upstream does around the request itself
 * (upstream-client.ts's `callTool`): its outcome made known or unknown (issue 22), an upstream's task tracked,
 * an upstream's input round kept for the gateway to relay. One set of steps for every way the call is sent —
 * through the SDK Client, raw to a 2026-07-28 upstream, or raw to a 2025-era one as one {@link RawToolCall}
 * (issue 25.2: no promise, async frame or abort listener of its own between the gate and the raw request).
 */
import {
  SdkError,
  SdkErrorCode,
  type CallToolResult,
  type JsonSchemaValidator,
  type LoggingLevel,
  type ProgressToken,
  type RequestOptions,
} from '@modelcontextprotocol/client';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { upstreamTaskOf, type McpSession, type UpstreamTask } from '../mcp/index.js';
import type { RawOutcome } from './upstream-raw.js';
import { boundedRefusal, rawToolResult } from './raw-results.js';

/** What the client needs of the upstream it belongs to (upstream.ts's Upstream). */
export interface ClientUpstream {
  readonly namespace: string;
  readonly options: { readonly callTimeoutMs?: number; readonly stdio?: unknown; readonly transport?: unknown };
  readonly session: McpSession | null;
  readonly offersTasks: boolean;
  forward<T>(scope: CallScope | undefined, request: (scope: CallScope | undefined) => Promise<T>): Promise<T>;
  /** A request in `scope` begins ({@link forward}'s count of the downstream's requests in flight, without its promise). */
  requestBegan(scope: CallScope | undefined): void;
  /** The request {@link requestBegan} counted has settled. */
  requestEnded(scope: CallScope | undefined): void;
  relayProgress(scope: CallScope): { readonly id: string; done(): void };
  requestOptions(scope: CallScope | undefined, options?: RequestOptions): RequestOptions;
  /** The upstream created a task for the request `scope` is of (tracked as unfinished: task-owners.ts). */
  taskCreated(task: UpstreamTask, scope: CallScope | undefined): void;
}

/** The downstream request an upstream request was made for (progress, sampling and logging go back there). */
export interface CallScope {
  readonly server: Server;
  readonly progressToken: ProgressToken | undefined;
  readonly sendNotification: (notification: {
    method: 'notifications/progress';
    params: Record<string, unknown>;
  }) => Promise<void>;
  /** The upstream's own result of the call, kept so that an error result is forwarded as the upstream gave it. */
  result?: CallToolResult;
  /**
   * Who a task the request creates belongs to (task-owners.ts's ownerKey of a 2026-07-28 request that
   * takes tasks), absent for any other request: whose the upstream's log lines may be (Relay.log).
   */
  readonly owner?: string;
  /**
   * The log level the downstream request asked for (a 2026-07-28 request's own, or the level a 2025-era
   * client set): every request to a 2026-07-28 upstream in this scope carries it in its `_meta`
   * (`io.modelcontextprotocol/logLevel`); absent, none is carried and the upstream sends no line.
   */
  readonly logLevel?: LoggingLevel;
  /**
   * The downstream request takes a task (see RelayedRequest.tasks): a modern upstream that offers the
   * extension is told so on this call, and may answer with a task (its `CreateTaskResult`, read by
   * `upstreamTaskOf` from the result). @default false
   */
  readonly tasks?: boolean;
  /**
   * Set when the call was sent upstream and no answer came back (it timed out, or was stopped while the
   * upstream ran it): the upstream may have completed it, so its outcome is unknown (issue 22).
   */
  unanswered?: string;
  /**
   * The upstream's own rounds of a 2026-07-28 request (multi round-trip requests): set, a modern upstream
   * may answer `input_required`, which is kept here for the gateway to relay (the call returns a stand-in
   * error result), and the retry's answers and the upstream's own state go back to it.
   */
  readonly input?: UpstreamInput;
  /**
   * The downstream request came by the gateway's fast path (fastpath.ts, http-fast.ts): to a 2025-era stdio
   * or HTTP upstream the call is sent raw (upstream-raw.ts, upstream-raw-http.ts) instead of through the SDK
   * Client. @default false
   */
  readonly raw?: boolean;
}

/** An upstream's own input round, as one 2026-07-28 request relays it (mrtr.ts wraps and opens its state). */
export interface UpstreamInput {
  /** What the client's retry gives back: the upstream it is for, the upstream's own state, the answers. */
  readonly given: {
    readonly upstream: string | undefined;
    readonly requestState: string | undefined;
    readonly inputResponses: Readonly<Record<string, unknown>>;
  } | null;
  /** What of elicitation, sampling and roots the client declared (passed on, so the upstream asks only for those). */
  readonly declared: Readonly<Record<string, unknown>>;
  /** Set by the call: the upstream answered `input_required`. */
  asked?: {
    readonly upstream: string;
    readonly inputRequests: Record<string, unknown>;
    readonly requestState: string | undefined;
  };
  /**
   * Why the retry's state cannot go upstream (malformed, or for another upstream than the one the call went
   * to): set, nothing is sent.
   */
  misrouted?: string;
}

/**
 * What the client and the audit are told about a call sent upstream that got no answer: its outcome is
 * unknown, and it must be checked before any retry.
 */
export function unansweredText(namespace: string, why: string): string {
  return (
    `upstream ${JSON.stringify(namespace)} ${why}: the outcome of the call is unknown — the upstream may have ` +
    'completed it. Check whether it took effect before any retry; do not simply call it again'
  );
}

/**
 * The call was stopped (the client, the gate's tool timeout, the gateway closing) while the upstream ran it:
 * without an answer, its outcome is unknown — set synchronously on abort, before the gate's own timeout result
 * reaches the gateway.
 */
export function stoppedCall(upstream: ClientUpstream, scope: CallScope | undefined): void {
  if (scope && scope.result === undefined)
    scope.unanswered ??= unansweredText(upstream.namespace, 'was still running the call when it was stopped');
}

/** Keeps an upstream's `input_required` for the gateway to relay (`standIn()` is answered instead); anything else as it came. */
export function relayedInput<T>(result: T, input: UpstreamInput | undefined, namespace: string, standIn: () => T): T {
  const r = result as { resultType?: unknown; inputRequests?: unknown; requestState?: unknown };
  if (r?.resultType !== 'input_required') return result;
  if (!input || r.inputRequests === null || typeof r.inputRequests !== 'object' || Array.isArray(r.inputRequests))
    throw new Error(`upstream "${namespace}" answered input_required the call cannot relay`);
  input.asked = {
    upstream: namespace,
    inputRequests: r.inputRequests as Record<string, unknown>,
    requestState: typeof r.requestState === 'string' ? r.requestState : undefined,
  };
  return standIn();
}

/** The stand-in result of a call whose upstream asked for input (relayed to the client: mrtr.ts); a new one each time. */
export function inputStandIn(): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: 'toolgate: the upstream asked for input; relayed to the client' }],
  };
}

/**
 * The upstream's answer, as the call resolves with it: a task the upstream created tracked at once (and
 * refused for a call that did not take one), the result kept in the scope (an error result is forwarded as
 * the upstream gave it). Throws what the call rejects with.
 */
export function answeredCall(
  result: CallToolResult,
  upstream: ClientUpstream,
  scope: CallScope | undefined,
  tasks: boolean,
): CallToolResult {
  const task = upstreamTaskOf(result);
  if (task !== undefined) {
    // Tracked at once, while the creating request is still in flight: the task may log on its own now.
    upstream.taskCreated(task, scope);
    // Only a request that declared the extension can get one (the era check refuses it otherwise);
    // handed on as a success carrying the task (the gateway answers the client's task handle).
    if (!tasks) throw new Error(`upstream "${upstream.namespace}" created a task the call did not take`);
    const created = { content: [], _meta: result._meta } as CallToolResult;
    if (scope) scope.result = created;
    return created;
  }
  if (scope) scope.result = result;
  return result;
}

/**
 * What a failed call rejects with. The request left for the upstream; an answer (a result, or a JSON-RPC
 * error: McpError) makes its outcome known. No answer — a timeout (a cancellation is sent), or the call stopped
 * by the gate's tool timeout or the client while the upstream ran it — leaves it unknown: the upstream may have
 * completed it, and "cancelled upstream" made a model retry it and run it twice (issue 22).
 */
export function failedCall(
  error: unknown,
  upstream: ClientUpstream,
  scope: CallScope | undefined,
  signal: AbortSignal | undefined,
): unknown {
  // A stopped call rejects as a RequestTimeout too: its `stopped` reason stands, not a timeout that never ran out.
  if (signal?.aborted === true && scope?.unanswered) return new Error(scope.unanswered);
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
    const ms = upstream.options.callTimeoutMs ?? 60_000;
    const text = unansweredText(upstream.namespace, `did not answer within ${ms} ms`);
    if (scope) scope.unanswered = text;
    return new Error(text);
  }
  // A refused result's message at most OUTPUT_ISSUES_MAX_CHARS characters, on every path (the SDK's is unbounded).
  return boundedRefusal(error);
}

/**
 * A `tools/call` sent raw to a 2025-era upstream (upstream-raw.ts's `send`), settled from the raw request's own
 * outcome: the same steps, in the same order, as the call through `forward` and the SDK path's awaits — in flight
 * for the downstream request until it settles, its progress relayed under a token of the gateway's own, its
 * result checked as the SDK Client checks it, its outcome made known or unknown — with one promise for the whole
 * call (the caller's) and the raw request's one abort listener, which notes a stop first ({@link aborted}).
 */
export class RawToolCall implements RawOutcome {
  readonly #upstream: ClientUpstream;
  readonly #scope: CallScope;
  readonly #signal: AbortSignal | undefined;
  readonly #name: string;
  readonly #tasks: boolean;
  readonly #resolve: (result: CallToolResult) => void;
  readonly #reject: (reason: unknown) => void;
  /** The progress token of the gateway's own (relayProgress), while the call runs. */
  token: { readonly id: string; done(): void } | undefined;
  validator: JsonSchemaValidator<unknown> | undefined;

  constructor(
    upstream: ClientUpstream,
    scope: CallScope,
    call: { readonly signal: AbortSignal | undefined; readonly name: string; readonly tasks: boolean },
    resolve: (result: CallToolResult) => void,
    reject: (reason: unknown) => void,
  ) {
    this.#upstream = upstream;
    this.#scope = scope;
    this.#signal = call.signal;
    this.#name = call.name;
    this.#tasks = call.tasks;
    this.#resolve = resolve;
    this.#reject = reject;
    // In flight for the downstream request from now until it settles (Upstream.forward's count).
    upstream.requestBegan(scope);
  }

  resolved(raw: unknown): void {
    let result: CallToolResult;
    try {
      const checked = relayedInput(
        rawToolResult(raw, this.validator, this.#name),
        this.#scope.input,
        this.#upstream.namespace,
        inputStandIn,
      );
      result = answeredCall(checked, this.#upstream, this.#scope, this.#tasks);
    } catch (error) {
      return this.rejected(error);
    }
    this.#end();
    this.#resolve(result);
  }

  rejected(reason: unknown): void {
    const error = failedCall(reason, this.#upstream, this.#scope, this.#signal);
    this.#end();
    this.#reject(error);
  }

  aborted(): void {
    stoppedCall(this.#upstream, this.#scope);
  }

  #end(): void {
    this.token?.done();
    this.#upstream.requestEnded(this.#scope);
  }
}
