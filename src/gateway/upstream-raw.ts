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
 * {@link plainReadResourceResult}); any other result goes through the SDK's spec schema.
 */
import {
  deserializeMessage,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  specTypeSchemas,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
  type CallToolResult,
  type JSONRPCMessage,
  type ReadResourceResult,
  type Tool as McpTool,
  type Transport,
} from '@modelcontextprotocol/client';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';

/** Node's longest timer delay; the shared timer is armed no further ahead (it fires and is armed again). */
const MAX_DELAY_MS = 2 ** 31 - 1;

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

/**
 * One raw request in flight: how it settles, and its place in the deadline queue (no timer of its own: one
 * shared timer per connection, {@link RawRequests}).
 */
class Pending {
  /** When it times out (performance.now() ms). */
  readonly at: number;
  readonly answered: (message: Record<string, unknown>) => void;
  /** Its timeout: the SDK's error, and the cancellation sent upstream. */
  readonly expire: () => void;

  constructor(at: number, answered: (message: Record<string, unknown>) => void, expire: () => void) {
    this.at = at;
    this.answered = answered;
    this.expire = expire;
  }
}

/** What a raw request needs: its timeout and the signal that stops it. */
export interface RawOptions {
  readonly timeout?: number;
  readonly signal?: AbortSignal;
}

/** One upstream connection's requests in flight on the fast path. */
export class RawRequests {
  readonly #transport: () => Transport | undefined;
  /** In flight by id, in the order they were sent. */
  readonly #pending = new Map<string, Pending>();
  readonly #validator = new AjvJsonSchemaValidator();
  /** The output validator of each tool definition (compiled once per definition, as the SDK's cache does). */
  readonly #outputs = new WeakMap<McpTool, ReturnType<AjvJsonSchemaValidator['getValidator']>>();
  #next = 0;
  /**
   * The one timer of the connection's deadlines (unref'd: while a request waits, the upstream's transport
   * keeps the process up), armed for `#armedAt`; a request sets no timer of its own, and settling one
   * clears nothing.
   */
  #timer: ReturnType<typeof setTimeout> | undefined;
  #armedAt = Infinity;

  constructor(transport: () => Transport | undefined) {
    this.#transport = transport;
  }

  /** Takes an answer to one of the gateway's own requests off the wire (true: the SDK Client never sees it). */
  take(message: JSONRPCMessage): boolean {
    const body = message as Record<string, unknown>;
    const id = body['id'];
    if (typeof id !== 'string' || !id.startsWith(RAW_ID) || 'method' in body) return false;
    // An answer to a request no longer waited for (stopped, timed out) is dropped, as the SDK drops it.
    this.#pending.get(id)?.answered(body);
    return true;
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
  ): Promise<CallToolResult> {
    // A tool whose output schema does not compile fails before anything is sent (the SDK's message).
    const validator = this.#outputValidator(definition, params.name);
    const raw = await this.#request('tools/call', params, options);
    const result = plainCallToolResult(raw)
      ? (raw as CallToolResult)
      : (checked('tools/call', specTypeSchemas.CallToolResult['~standard'].validate(raw)) as CallToolResult);
    if (validator && !result.isError) {
      if (result.structuredContent === undefined)
        throw new ProtocolError(
          ProtocolErrorCode.InvalidRequest,
          `Tool ${params.name} has an output schema but did not return structured content`,
        );
      let outcome: ReturnType<typeof validator>;
      try {
        outcome = validator(result.structuredContent);
      } catch (error) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Failed to validate structured content: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      if (!outcome.valid)
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Structured content does not match the tool's output schema: ${outcome.errorMessage}`,
        );
    }
    return result;
  }

  /** `resources/read` on the fast path. */
  async readResource(params: Record<string, unknown>, options: RawOptions): Promise<ReadResourceResult> {
    const raw = await this.#request('resources/read', params, options);
    if (plainReadResourceResult(raw)) return raw as ReadResourceResult;
    return checked(
      'resources/read',
      specTypeSchemas.ReadResourceResult['~standard'].validate(raw),
    ) as ReadResourceResult;
  }

  #outputValidator(definition: McpTool, name: string): ReturnType<AjvJsonSchemaValidator['getValidator']> | undefined {
    const schema = definition.outputSchema;
    if (!schema) return undefined;
    let validator = this.#outputs.get(definition);
    if (validator) return validator;
    try {
      validator = this.#validator.getValidator(schema as Parameters<AjvJsonSchemaValidator['getValidator']>[0]);
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
   * 2025 codec removes it), rejects as the SDK Client's request() does.
   */
  #request(method: string, params: Record<string, unknown>, options: RawOptions): Promise<unknown> {
    const { signal } = options;
    if (signal?.aborted) {
      const reason: unknown = signal.reason;
      return Promise.reject(
        reason instanceof SdkError ? reason : new SdkError(SdkErrorCode.RequestTimeout, String(reason)),
      );
    }
    const transport = this.#transport();
    if (!transport) return Promise.reject(new Error('Not connected'));
    const id = `${RAW_ID}${++this.#next}`;
    const timeout = options.timeout ?? 60_000;
    return new Promise<unknown>((resolve, reject) => {
      const settle = (): void => {
        signal?.removeEventListener('abort', onAbort);
        this.#pending.delete(id);
      };
      // Stopped or timed out: the upstream is told (the SDK's notification), the call fails now.
      const cancel = (reason: unknown): void => {
        if (!this.#pending.has(id)) return;
        settle();
        transport
          .send({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: id, reason: String(reason) },
          })
          .catch(() => undefined);
        reject(reason instanceof SdkError ? reason : new SdkError(SdkErrorCode.RequestTimeout, String(reason)));
      };
      const onAbort = (): void => cancel(signal?.reason);
      const answered = (message: Record<string, unknown>): void => {
        settle();
        if ('closed' in message) return reject(message['closed']);
        const error = message['error'] as { code?: unknown; message?: unknown; data?: unknown } | undefined;
        if (error !== undefined && error !== null && typeof error === 'object')
          return reject(ProtocolError.fromError(Number(error.code), String(error.message), error.data));
        resolve(withoutResultType(message['result']));
      };
      const expire = (): void => cancel(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out', { timeout }));
      const at = performance.now() + timeout;
      this.#pending.set(id, new Pending(at, answered, expire));
      this.#arm(at);
      signal?.addEventListener('abort', onAbort, { once: true });
      transport.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage).catch((error: unknown) => {
        if (!this.#pending.has(id)) return;
        settle();
        reject(error);
      });
    });
  }

  /**
   * Arms the shared timer for `at` unless it is armed for then or sooner. It is never armed later than the
   * earliest deadline in flight (a request settled before its deadline leaves the timer early, and when it
   * fires it finds the next one); a request's deadline is never earlier than those sent before it with the
   * same timeout, so a connection arms it about once per timeout, not once per request.
   */
  #arm(at: number): void {
    if (at >= this.#armedAt) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#armedAt = at;
    // Never past Node's longest delay (2^31 - 1 ms): a longer one fires after 1 ms, and again, every millisecond.
    this.#timer = setTimeout(() => this.#expire(), Math.min(Math.max(0, at - performance.now()), MAX_DELAY_MS));
    this.#timer.unref();
  }

  /** The shared timer fired: every request past its deadline times out (in the order sent), then it is armed again. */
  #expire(): void {
    this.#timer = undefined;
    this.#armedAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const pending of [...this.#pending.values()])
      if (pending.at <= now) pending.expire();
      else if (pending.at < next) next = pending.at;
    if (next !== Infinity) this.#arm(next);
  }
}

/** A result with its `resultType` removed (the SDK's 2025 codec does this before validating). */
function withoutResultType(result: unknown): unknown {
  if (!isPlainObject(result) || !('resultType' in result)) return result;
  const { resultType: _dropped, ...rest } = result;
  return rest;
}

/** The output of one of the SDK's spec schemas, or the SDK's InvalidResult error. */
function checked(method: string, outcome: unknown): unknown {
  const result = outcome as { value?: unknown; issues?: readonly { message: string; path?: readonly unknown[] }[] };
  if (outcome instanceof Promise) throw new SdkError(SdkErrorCode.InvalidResult, `Invalid result for ${method}`);
  if (result.issues && result.issues.length > 0) {
    const error = result.issues
      .map((i) =>
        i.path?.length
          ? `${i.path.map((p) => String(typeof p === 'object' && p !== null ? (p as { key: unknown }).key : p)).join('.')}: ${i.message}`
          : i.message,
      )
      .join(', ');
    throw new SdkError(SdkErrorCode.InvalidResult, `Invalid result for ${method}: ${error}`);
  }
  return result.value;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A plain object a zod record or loose object gives back unchanged (no own `__proto__`, which a copy would not keep). */
function plainRecord(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && !Object.hasOwn(value, '__proto__');
}

/**
 * A result's `_meta` that every schema passes through unchanged: absent, or a plain object with none of the
 * keys the SDKs' schemas check (`progressToken`, `io.modelcontextprotocol/…`).
 */
function plainMeta(meta: unknown): boolean {
  if (meta === undefined) return true;
  if (!plainRecord(meta)) return false;
  for (const key of Object.keys(meta))
    if (key === 'progressToken' || key.startsWith('io.modelcontextprotocol/')) return false;
  return true;
}

/** A text block exactly as the schemas give it back: `type`, `text` and perhaps a plain `_meta`, nothing else. */
function plainTextBlock(block: unknown): boolean {
  if (!isPlainObject(block) || block['type'] !== 'text' || typeof block['text'] !== 'string') return false;
  for (const key of Object.keys(block))
    if (key !== 'type' && key !== 'text' && !(key === '_meta' && plainRecord(block['_meta']))) return false;
  return true;
}

/**
 * Whether a `tools/call` result is already what the SDKs' zod schemas (v2's on the upstream side, v1's on
 * the client side) would return for it — text content only, `isError` a boolean, `structuredContent` a plain
 * object, a plain `_meta` — so that validating it would change nothing. Anything else is validated by the
 * schemas.
 */
export function plainCallToolResult(result: unknown): boolean {
  if (!plainRecord(result) || !Array.isArray(result['content'])) return false;
  if (result['isError'] !== undefined && typeof result['isError'] !== 'boolean') return false;
  if (result['structuredContent'] !== undefined && !plainRecord(result['structuredContent'])) return false;
  if (!plainMeta(result['_meta'])) return false;
  for (const block of result['content'] as unknown[]) if (!plainTextBlock(block)) return false;
  return true;
}

/** The same for a `resources/read` result: text contents (`uri`, `text`, perhaps `mimeType` and `_meta`). */
export function plainReadResourceResult(result: unknown): boolean {
  if (!plainRecord(result) || !Array.isArray(result['contents'])) return false;
  if (!plainMeta(result['_meta'])) return false;
  for (const item of result['contents'] as unknown[]) {
    if (!isPlainObject(item) || typeof item['uri'] !== 'string' || typeof item['text'] !== 'string') return false;
    for (const key of Object.keys(item))
      if (
        key !== 'uri' &&
        key !== 'text' &&
        !(key === 'mimeType' && typeof item['mimeType'] === 'string') &&
        !(key === '_meta' && plainRecord(item['_meta']))
      )
        return false;
  }
  return true;
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
  if (result !== undefined)
    return isPlainObject(result) && (result['_meta'] === undefined || isPlainObject(result['_meta']));
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
 * The lines of a stdio peer, split as the SDK's ReadBuffer splits them: at each newline, a trailing `\r`
 * dropped, at most STDIO_DEFAULT_MAX_BUFFER_SIZE bytes held (more throws, and what was held is dropped).
 * Both sides of the gateway's fast path read through it.
 */
export class StdioLines {
  #buffer: Buffer | undefined;

  append(chunk: Buffer): void {
    if ((this.#buffer?.length ?? 0) + chunk.length > STDIO_DEFAULT_MAX_BUFFER_SIZE) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${STDIO_DEFAULT_MAX_BUFFER_SIZE} bytes`);
    }
    this.#buffer = this.#buffer ? Buffer.concat([this.#buffer, chunk]) : chunk;
  }

  /** The next whole line, or null until a newline comes. */
  next(): string | null {
    const buffer = this.#buffer;
    const index = buffer ? buffer.indexOf(10) : -1;
    if (!buffer || index === -1) return null;
    this.#buffer = index + 1 < buffer.length ? buffer.subarray(index + 1) : undefined;
    // A trailing `\r` dropped (the SDK's `replace(/\r$/, '')`, without a regular expression per line).
    return buffer.toString('utf8', 0, index > 0 && buffer[index - 1] === 13 ? index - 1 : index);
  }

  clear(): void {
    this.#buffer = undefined;
  }
}

/** The SDK's ReadBuffer for an upstream: the fast path's answers read without the SDK's schema. */
class RawReadBuffer extends StdioLines {
  readMessage(): JSONRPCMessage | null {
    for (let line = this.next(); line !== null; line = this.next()) {
      try {
        if (line.includes(`"${RAW_ID}`)) {
          const parsed: unknown = JSON.parse(line);
          if (rawAnswer(parsed)) return parsed;
        }
        return deserializeMessage(line);
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
