/**
 * The gateway's fast path towards a 2025-era stdio upstream (issue 25.2): a `tools/call` or `resources/read`
 * the gate has allowed is sent with `transport.send()` on the upstream's own transport, under an id of the
 * gateway's own (`toolgate-raw:<n>`, a string: the SDK Client numbers its requests, so the two never meet),
 * and its answer is taken off the wire by the upstream's inbound tap (after the era check) before the SDK
 * Client sees it. What the SDK Client would do to the answer is done here, the same way: the same timeout
 * and cancellation (`notifications/cancelled` upstream, the same SdkError), the same errors for a JSON-RPC
 * error answer (ProtocolError) or a closed connection, the same output-schema check of a tool's structured
 * content (the SDK's Ajv validator, its messages). The zod validation of the result is skipped only for a
 * result already in the form that validation would return unchanged ({@link plainCallToolResult},
 * {@link plainReadResourceResult}); any other result goes through the SDK Client's 2025-era codec, as on the
 * SDK path (raw-results.ts's legacyResult: its schema, its error).
 */
import {
  parseJSONRPCMessage,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
  type CallToolResult,
  type JSONRPCMessage,
  type JsonSchemaType,
  type JsonSchemaValidator,
  type ReadResourceResult,
  type Tool as McpTool,
  type Transport,
} from '@modelcontextprotocol/client';
import { expiringDeadlines, type Expiring, type Queue, type Turn } from '../deadlines.js';
import { parseJsonText } from '../json-text.js';
import { Lines } from '../lines.js';
import { outputSchemaValidator } from '../mcp/index.js';
import { noteAnswerLine } from './answer-lines.js';
import {
  isPlainObject,
  legacyResult,
  outputChecked,
  plainReadResourceResult,
  plainResultMeta,
  rawToolResult,
} from './raw-results.js';

/** The prefix of the gateway's own request ids towards an upstream. */
const RAW_ID = 'toolgate-raw:';

/** Whether `message` is one of the fast path's own requests (an id of the gateway's own, a method). */
export function isRawRequest(message: JSONRPCMessage): boolean {
  const id = (message as { id?: unknown }).id;
  return typeof id === 'string' && id.startsWith(RAW_ID) && 'method' in message;
}

/** Whether the fast path is switched off (`TOOLGATE_GATEWAY_FAST_PATH=off`: every request on the SDK path). */
export function fastPathOff(): boolean {
  return process.env['TOOLGATE_GATEWAY_FAST_PATH'] === 'off';
}

interface Pending {
  readonly answered: (message: Record<string, unknown>) => void;
}

/**
 * Where a raw request's outcome goes: a promise's resolving functions, or the caller's own object (the
 * gateway client's `tools/call`, upstream-call.ts: no promise of ours per request). Each is called once.
 */
export interface RawOutcome {
  /** The answer's result (`resultType` removed from a 2025-era one). */
  resolved(value: unknown): void;
  /** The request failed: the SDK Client's error for it (a JSON-RPC error, a timeout, a closed connection, a stop). */
  rejected(reason: unknown): void;
  /** The request's signal aborted, while it waited: called first, before it is cancelled and rejected. */
  aborted?(): void;
}

/**
 * A transport that stops one of its raw 2026-07-28 requests by id (upstream-raw-http.ts's: its POST closed, and
 * any resumption of its stream neither begun nor left open), as aborting the request's signal stops it: such a
 * request is sent with no signal of its own, and no AbortController is made for it (issue 25.3: ~25k
 * instructions a call on Node 20).
 */
export const STOP_RAW: unique symbol = Symbol('toolgate.stopRaw');

/** Tells a {@link RawStopping} transport that one of its raw requests settled: nothing of it is to be stopped any more. */
export const RAW_SETTLED: unique symbol = Symbol('toolgate.rawSettled');

/** A transport that stops its raw requests by id ({@link STOP_RAW}). */
export interface RawStopping {
  /** Stops the request (its POST closed, a resumption of its stream neither begun nor left open). */
  [STOP_RAW](id: string): void;
  /** The request settled (answered, failed, stopped): what would stop a resumption of its stream is dropped. */
  [RAW_SETTLED](id: string): void;
}

function stopsRaw(transport: Transport): transport is Transport & RawStopping {
  return typeof (transport as Partial<RawStopping>)[STOP_RAW] === 'function';
}

/** What a raw request needs: its timeout and the signal that stops it. */
export interface RawOptions {
  readonly timeout?: number;
  readonly signal?: AbortSignal;
  /** A 2026-07-28 request: an `input_required` answer is the call's value (the SDK's manual mode). */
  readonly allowInputRequired?: boolean;
}

/**
 * What a 2026-07-28 raw request takes of the SDK Client (upstream-raw-modern.ts): the request as the Client
 * would send it (its `_meta` envelope) and the answer's result read as the Client reads it.
 */
export interface ModernWire {
  /** The message with the Client's per-request envelope, as its `_envelopeOutbound` makes it. */
  envelope(message: { method: string; params: Record<string, unknown>; jsonrpc: '2.0'; id: string }): JSONRPCMessage;
  /** The result as the Client's request funnel resolves it (decoded, validated); throws as it rejects. */
  result(method: string, raw: unknown, options: RawOptions): unknown;
}

/** One upstream connection's requests in flight on the fast path. */
export class RawRequests {
  readonly #transport: () => Transport | undefined;
  readonly #pending = new Map<string, Pending>();
  /** The output validator of each tool definition (compiled once per definition, as the SDK's cache does). */
  readonly #outputs = new WeakMap<McpTool, JsonSchemaValidator<unknown>>();
  #next = 0;
  #broken = false;

  constructor(transport: () => Transport | undefined) {
    this.#transport = transport;
  }

  /** Takes an answer to one of the gateway's own requests off the wire (true: the SDK Client never sees it). */
  take(message: JSONRPCMessage): boolean {
    const body = message as Record<string, unknown>;
    const id = body['id'];
    if (typeof id !== 'string' || !id.startsWith(RAW_ID) || 'method' in body) return false;
    // An answer to a request no longer waited for (stopped, timed out) is dropped, as the SDK drops it. After
    // the upstream broke its era, a result fails its request as the closing connection fails the SDK's.
    const answer =
      this.#broken && !('error' in body)
        ? { closed: new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed') }
        : body;
    this.#pending.get(id)?.answered(answer);
    return true;
  }

  /**
   * The upstream broke its era (src/mcp/era.ts; it is being reconnected): no result is taken on this
   * connection any more — an error answer (the era check's refusal among them) still fails its request.
   */
  broken(): void {
    this.#broken = true;
  }

  /** Fails every request in flight: the connection closed (the SDK Client's error for it). */
  fail(): void {
    const error = new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed');
    for (const pending of [...this.#pending.values()]) pending.answered({ closed: error });
  }

  /** `tools/call` on the fast path: the answer checked as the SDK Client checks it. */
  async callTool(
    params: { readonly name: string } & Record<string, unknown>,
    definition: McpTool,
    options: RawOptions,
    modern?: ModernWire,
  ): Promise<CallToolResult> {
    // A tool whose output schema does not compile fails before anything is sent (the SDK's message).
    const validator = this.outputValidator(definition, params.name);
    const raw = await this.#request('tools/call', params, options, modern);
    return modern
      ? outputChecked(modern.result('tools/call', raw, options) as CallToolResult, validator, params.name)
      : rawToolResult(raw, validator, params.name);
  }

  /** `resources/read` on the fast path (`modern`: a 2026-07-28 request, its result read by the Client's parts). */
  async readResource(
    params: Record<string, unknown>,
    options: RawOptions,
    modern?: ModernWire,
  ): Promise<ReadResourceResult> {
    const raw = await this.#request('resources/read', params, options, modern);
    if (modern) return modern.result('resources/read', raw, options) as ReadResourceResult;
    if (plainReadResourceResult(raw)) return raw as ReadResourceResult;
    return legacyResult('resources/read', raw) as ReadResourceResult;
  }

  /**
   * The output validator of a tool's definition (compiled once per definition), or undefined without an output
   * schema; a schema that does not compile throws the SDK's error.
   */
  outputValidator(definition: McpTool, name: string): JsonSchemaValidator<unknown> | undefined {
    const schema = definition.outputSchema;
    if (!schema) return undefined;
    let validator = this.#outputs.get(definition);
    if (validator) return validator;
    try {
      validator = outputSchemaValidator.getValidator(schema as JsonSchemaType);
    } catch (error) {
      const message = (error instanceof Error ? error.message : String(error)).slice(0, 200);
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Tool '${name}' has an invalid outputSchema: ${message}`,
      );
    }
    this.#outputs.set(definition, validator);
    return validator;
  }

  /**
   * One request under an id of the gateway's own; resolves with its result (`resultType` removed, as the SDK's
   * 2025 codec removes it; a 2026-07-28 request's result as it came, for `modern` to read), rejects as the SDK
   * Client's request() does.
   */
  #request(
    method: string,
    params: Record<string, unknown>,
    options: RawOptions,
    modern?: ModernWire,
  ): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) =>
      this.send(method, params, options, { resolved: resolve, rejected: reject }, modern),
    );
  }

  /**
   * Sends one request under an id of the gateway's own; its outcome goes to `out`, once (at once when it fails
   * before anything is sent: a stopped signal, no transport, an envelope that cannot be made, a send that throws).
   */
  send(
    method: string,
    params: Record<string, unknown>,
    options: RawOptions,
    out: RawOutcome,
    modern?: ModernWire,
  ): void {
    const { signal } = options;
    if (signal?.aborted) {
      const reason: unknown = signal.reason;
      return out.rejected(
        reason instanceof SdkError ? reason : new SdkError(SdkErrorCode.RequestTimeout, String(reason)),
      );
    }
    const transport = this.#transport();
    if (!transport) return out.rejected(new Error('Not connected'));
    const id = `${RAW_ID}${++this.#next}`;
    const timeout = options.timeout ?? 60_000;
    // A 2026-07-28 request as the SDK Client words it (its envelope; only the id differs), made before anything
    // waits for it: an envelope that cannot be made fails the call now, nothing sent, nothing left pending.
    let message: JSONRPCMessage;
    try {
      message = modern
        ? modern.envelope({ method, params, jsonrpc: '2.0', id })
        : ({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage);
    } catch (error) {
      return out.rejected(error);
    }
    const pending = new PendingRequest(this.#pending, transport, id, timeout, signal, out);
    // A 2026-07-28 request is stopped as the SDK Client stops it: its own signal, given to the transport as
    // the request's (`requestSignal`), aborted — its POST closed, and a resumption of its stream (a GET
    // naming the last event id) neither begun nor left open. A transport that stops it by id does the same
    // without a signal ({@link STOP_RAW}).
    if (modern !== undefined) {
      pending.modern = true;
      if (!stopsRaw(transport)) pending.stopper = new AbortController();
    }
    this.#pending.set(id, pending);
    let sent: Promise<void>;
    try {
      sent = pending.stopper
        ? transport.send(message, { requestSignal: pending.stopper.signal })
        : transport.send(message);
    } catch (error) {
      // A transport that throws rather than rejects: nothing waits for an answer — unless it was settled (answered,
      // stopped, failed) inside send() before it threw: its outcome is given, once.
      if (this.#pending.get(id) !== pending) return;
      pending.settle();
      return out.rejected(error);
    }
    // Its deadline and abort listener set after the write (issue 25.2: off the request's critical path, the
    // upstream already reading it): nothing answers, times out or stops the request before this turn's code
    // returns to the event loop, but the transport itself inside send() — settled there, nothing is left to
    // watch; its signal aborted there, it is stopped now as its listener would have stopped it.
    if (this.#pending.get(id) === pending) {
      deadlines.add(pending, timeout);
      if (signal?.aborted === true) pending.handleEvent();
      else signal?.addEventListener('abort', pending, { once: true });
    }
    sent.catch((error: unknown) => {
      if (!this.#pending.has(id)) return;
      pending.settle();
      out.rejected(error);
    });
  }
}

/**
 * The raw requests' deadlines, every connection's: one queue per timeout length, one timer (src/deadlines.ts;
 * issue 25: no timer per request).
 */
const deadlines = expiringDeadlines<PendingRequest>();

/**
 * One raw request waiting for its answer: its deadline in the shared {@link deadlines} (no timer per request) and its signal's abort listener (itself, no closure). Stopped or timed out, the
 * upstream is told (the SDK's notification) and the call fails now.
 */
class PendingRequest implements Pending, Expiring<PendingRequest> {
  /** Its place in {@link deadlines}. */
  turn: Turn | null = null;
  queue: Queue<PendingRequest> | null = null;
  prev: PendingRequest | null = null;
  next: PendingRequest | null = null;
  queued = false;
  /**
   * A 2026-07-28 request's own signal (the transport's `requestSignal`): its result is handed on as it came,
   * and it is stopped by aborting this (its POST and any resumption of its stream closed).
   */
  stopper: AbortController | undefined;
  /** A 2026-07-28 request: its result is handed on as it came, and it is stopped, not cancelled by notification. */
  modern = false;
  readonly #out: RawOutcome;
  readonly #all: Map<string, Pending>;
  readonly #transport: Transport;
  readonly #id: string;
  readonly #timeout: number;
  readonly #signal: AbortSignal | undefined;

  constructor(
    all: Map<string, Pending>,
    transport: Transport,
    id: string,
    timeout: number,
    signal: AbortSignal | undefined,
    out: RawOutcome,
  ) {
    this.#all = all;
    this.#transport = transport;
    this.#id = id;
    this.#timeout = timeout;
    this.#signal = signal;
    this.#out = out;
  }

  settle(): void {
    deadlines.remove(this);
    this.#signal?.removeEventListener('abort', this);
    this.#all.delete(this.#id);
    if (this.modern && this.stopper === undefined) (this.#transport as Transport & RawStopping)[RAW_SETTLED](this.#id);
  }

  answered(message: Record<string, unknown>): void {
    // Its signal aborted inside the transport's send(), before its listener was set, and answered there after:
    // a cancelled request, stopped as its listener would have stopped it, not answered.
    if (this.#signal?.aborted === true) return this.handleEvent();
    this.settle();
    if ('closed' in message) return this.#out.rejected(message['closed']);
    const error = message['error'] as { code?: unknown; message?: unknown; data?: unknown } | undefined;
    if (error !== undefined && error !== null && typeof error === 'object')
      return this.#out.rejected(ProtocolError.fromError(Number(error.code), String(error.message), error.data));
    this.#out.resolved(this.modern ? message['result'] : withoutResultType(message['result']));
  }

  /** The deadline passed. */
  expire(): void {
    this.#cancel(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out', { timeout: this.#timeout }));
  }

  /** The signal aborted (an EventListener object): the caller's note of it first (RawOutcome.aborted). */
  handleEvent(): void {
    this.#out.aborted?.();
    this.#cancel(this.#signal?.reason);
  }

  #cancel(reason: unknown): void {
    if (!this.#all.has(this.#id)) return;
    // As the SDK Client stops a 2026-07-28 request on a transport with a stream per request: its request
    // signal is aborted, which closes its stream and any resumption of it (no notifications/cancelled in
    // that revision). A transport that stops it by id does so before it is settled (settling drops what
    // stops a resumption of its stream).
    const byId = this.modern && this.stopper === undefined;
    if (byId) (this.#transport as Transport & RawStopping)[STOP_RAW](this.#id);
    this.settle();
    if (this.stopper) this.stopper.abort(reason);
    else if (!byId) {
      // A transport that throws rather than rejects still fails the request (no hang, nothing thrown at the
      // deadline's timer or the signal's abort).
      try {
        this.#transport
          .send({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: this.#id, reason: String(reason) },
          })
          .catch(() => undefined);
      } catch {
        // the upstream is not told; the call fails all the same
      }
    }
    this.#out.rejected(reason instanceof SdkError ? reason : new SdkError(SdkErrorCode.RequestTimeout, String(reason)));
  }
}

/** A result with its `resultType` removed (the SDK's 2025 codec does this before validating). */
function withoutResultType(result: unknown): unknown {
  if (!isPlainObject(result) || !('resultType' in result)) return result;
  const { resultType: _dropped, ...rest } = result;
  return rest;
}

/**
 * Whether a line the upstream sent is an answer to one of the fast path's requests in exactly the shape the
 * SDK's JSON-RPC schema accepts (a strict result or error response): such a line is handed on as parsed;
 * anything else goes through the SDK's own parse.
 */
export function rawAnswer(message: unknown): message is JSONRPCMessage {
  if (!isPlainObject(message) || message['jsonrpc'] !== '2.0') return false;
  const id = message['id'];
  if (typeof id !== 'string' || !id.startsWith(RAW_ID)) return false;
  const keys = Object.keys(message);
  if (keys.length !== 3) return false;
  const result = message['result'];
  // A `_meta` the SDK's schema would change (a serverInfo it drops or trims) is left to it.
  if (result !== undefined) return isPlainObject(result) && plainResultMeta(result['_meta']);
  const error = message['error'];
  return (
    isPlainObject(error) &&
    Number.isSafeInteger(error['code']) &&
    typeof error['message'] === 'string' &&
    Object.keys(error).every((k) => k === 'code' || k === 'message' || k === 'data')
  );
}

/**
 * The line reader of an upstream's stdio transport (the SDK's ReadBuffer, line for line), except that an
 * answer to the fast path's own request is parsed once and not run through the SDK's zod schema.
 */
/**
 * The lines of a stdio peer, split as the SDK's ReadBuffer splits them (src/lines.ts), at most
 * STDIO_DEFAULT_MAX_BUFFER_SIZE bytes held (more throws, and what was held is dropped). Both sides of the
 * gateway's fast path read through it.
 */
export class StdioLines extends Lines {
  override append(chunk: Buffer): void {
    if (this.size + chunk.length > STDIO_DEFAULT_MAX_BUFFER_SIZE) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${STDIO_DEFAULT_MAX_BUFFER_SIZE} bytes`);
    }
    super.append(chunk);
  }
}

/**
 * The SDK's ReadBuffer for an upstream: the fast path's answers read without the SDK's schema, every line read
 * with its keys as written (parseJsonText: the SDK's `JSON.parse` would misread escaped keys on Node 24, and a
 * raw answer's own text may be written to the client, answer-lines.ts).
 */
class RawReadBuffer extends StdioLines {
  readMessage(): JSONRPCMessage | null {
    for (let line = this.next(); line !== null; line = this.next()) {
      try {
        const parsed: unknown = parseJsonText(line);
        if (rawAnswer(parsed)) {
          // The line kept for the answer to be written from it where that is the same bytes (answer-lines.ts).
          noteAnswerLine((parsed as { result?: unknown }).result, line);
          return parsed;
        }
        return parseJSONRPCMessage(parsed);
      } catch (error) {
        // As the SDK's reader: a line that is not JSON is skipped, one its schema refuses is an error.
        if (error instanceof SyntaxError) continue;
        throw error;
      }
    }
    return null;
  }
}

/**
 * `transport` (the SDK's StdioClientTransport, not started) reading the fast path's answers without the
 * SDK's schema; a transport without the SDK's line reader is returned as it is.
 */
export function readRawAnswers<T extends Transport>(transport: T): T {
  const reader = transport as unknown as { _readBuffer?: { readMessage?: unknown } };
  if (typeof reader._readBuffer?.readMessage === 'function') reader._readBuffer = new RawReadBuffer();
  return transport;
}
