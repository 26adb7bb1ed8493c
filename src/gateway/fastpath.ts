/**
 * The gateway's fast path (issue 25.2 over stdio; over Streamable HTTP, http-fast.ts answers each request on
 * its own response through a {@link FastReplies} of its own). `toolgate gateway` reads its client's lines itself
 * ({@link FastStdioTransport}, the SDK's StdioServerTransport otherwise) and takes the common requests —
 * a `tools/call` or `resources/read` in the plain shape every client sends, on an initialised session —
 * off the wire before the SDK `Server` parses them: the request goes to the session's OWN handler
 * (session.ts's `callTool` / `readResource` through `requestHandlers`: the same gate, audit, pins, limits,
 * approvals and elicitation as the SDK path, nothing copied) with a request of its own (signal, progress
 * token, notifications), and the answer is written back under the client's id as the SDK Server would
 * write it. Towards a 2025-era stdio upstream the allowed call is then sent raw on the upstream's transport
 * (upstream-raw.ts). What the SDK would check is checked the same way: a request in any other shape (other
 * keys, other `_meta`, a task, an id or token zod would refuse), any other method, and every response,
 * notification and request of the client's own go to the SDK Server unchanged. A client's
 * `notifications/cancelled` for a fast-path request aborts it (the upstream is told under its own id); a
 * cancelled request is not answered, as in the SDK. `TOOLGATE_GATEWAY_FAST_PATH=off` serves every request
 * on the SDK path (tests compare the two).
 */
import { getEventListeners } from 'node:events';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  CancelledNotificationSchema,
  ErrorCode,
  JSONRPCMessageSchema,
  JSONRPCNotificationSchema,
  McpError,
  type CallToolRequest,
  type JSONRPCMessage,
  type ReadResourceRequest,
  type RequestId,
  type ServerNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { safeKey } from '../crypto.js';
import { parseJsonText } from '../json-text.js';
import { requestHandlers, type GatewayCore, type GatewayRequestContext, type SessionRequest } from './session.js';
import { answerLineOf } from './answer-lines.js';
import { isPlainObject, plainCallToolResult } from './raw-results.js';
import { fastPathOff, StdioLines } from './upstream-raw.js';

type Handlers = ReturnType<typeof requestHandlers>;

/** How many finished requests' AbortControllers a connection keeps for its next requests. */
const SPARE_CONTROLLERS = 8;

/** The handlers of each server createGateway made (bound on first use). */
const fastPaths = new WeakMap<Server, () => Handlers>();

/** Lets `server` (a session createGateway opened) be served by the fast path over stdio. */
export function allowFastPath(server: Server, core: GatewayCore, contextOption: () => GatewayRequestContext): void {
  let handlers: Handlers | undefined;
  fastPaths.set(server, () => (handlers ??= requestHandlers(core, contextOption, server)));
}

/** Connects `server` to this process's stdin and stdout, with the fast path when it has one. */
export function connectStdio(server: Server): Promise<void> {
  const fast = fastPathOf(server);
  if (!fast) return server.connect(new StdioServerTransport());
  const transport = new FastStdioTransport();
  transport.fast = fast(stdioReplies(server, transport));
  return server.connect(transport);
}

/**
 * The fast path of `server` (a session createGateway opened) for a connection that answers on `replies`,
 * or undefined when it has none (another endpoint's server) or the fast path is off.
 */
export function fastPathOf(server: Server): ((replies: FastReplies) => FastPath) | undefined {
  const handlers = fastPaths.get(server);
  if (!handlers || fastPathOff()) return undefined;
  return (replies) => new FastPath(handlers(), server, replies);
}

/**
 * Where the answers of a connection's fast-path requests go: a notification of request `id` (progress) and
 * its answer. Over stdio both are lines on the one transport; over HTTP they are the events of the
 * request's own response (http-fast.ts).
 */
export interface FastReplies {
  /** A notification related to request `id` (the SDK Server's `notification(…, { relatedRequestId })`). */
  notify(id: RequestId, notification: ServerNotification): Promise<void>;
  /** The answer of request `id`, or undefined: the request was cancelled and is not answered (its stream ends). */
  answer(id: RequestId, message: JSONRPCMessage | undefined): void;
  /** The session the request belongs to (`extra.sessionId` on the SDK path). */
  readonly sessionId?: string | undefined;
  /** The request's verified token (`extra.authInfo` on the SDK path). */
  readonly authInfo?: AuthInfo | undefined;
}

/**
 * A stdio connection's replies: lines on the transport, as the SDK Server writes them (an answer written at
 * once: no promise per answer, as nothing waits for it).
 */
function stdioReplies(server: Server, transport: FastStdioTransport): FastReplies {
  return {
    notify: (id, notification) => server.notification(notification, { relatedRequestId: id }),
    answer: (_id, message) => {
      if (message !== undefined) transport.write(message);
    },
  };
}

/** A JSON-RPC id (or progress token) as the SDK's schema takes it: a string or a safe integer. */
function isId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
}

/** Whether every key of `object` is one of `keys`. */
function only(object: Record<string, unknown>, keys: readonly string[]): boolean {
  for (const key of Object.keys(object)) if (!keys.includes(key)) return false;
  return true;
}

/** A request the fast path takes, as {@link plainRequestOf} read it. */
export interface PlainRequest {
  readonly id: RequestId;
  readonly method: 'tools/call' | 'resources/read';
  readonly params: Record<string, unknown>;
  readonly progressToken: RequestId | undefined;
}

/**
 * `message` (as JSON.parse gave it) when it is a request the fast path takes — a `tools/call` or
 * `resources/read` in the plain shape every client sends, exactly what the SDK's schemas would hand on
 * unchanged: `jsonrpc`, an id zod takes, `params` with the method's own keys and at most a progress token
 * in `_meta` (no task, no envelope), arguments a plain object — else undefined (the SDK path serves it).
 */
export function plainRequestOf(message: unknown): PlainRequest | undefined {
  if (!isPlainObject(message) || message['jsonrpc'] !== '2.0') return undefined;
  const method = message['method'];
  const id = message['id'];
  const params = message['params'];
  if (method !== 'tools/call' && method !== 'resources/read') return undefined;
  if (!isId(id) || !only(message, ['jsonrpc', 'id', 'method', 'params']) || !isPlainObject(params)) return undefined;
  const meta = params['_meta'];
  if (meta !== undefined && !(isPlainObject(meta) && only(meta, ['progressToken']) && isId(meta['progressToken'])))
    return undefined;
  const progressToken = meta === undefined ? undefined : (meta['progressToken'] as RequestId);
  if (method === 'tools/call') {
    const args = params['arguments'];
    if (!only(params, ['name', 'arguments', '_meta']) || typeof params['name'] !== 'string') return undefined;
    // Arguments as zod's record would give them back (a copy would not keep an own `__proto__`).
    if (args !== undefined && !(isPlainObject(args) && !Object.hasOwn(args, '__proto__'))) return undefined;
  } else if (!only(params, ['uri', '_meta']) || typeof params['uri'] !== 'string') return undefined;
  return { id, method, params, progressToken };
}

/** A request id as the fast path's requests in flight are kept by it (a string by its safeKey). */
function inflightKey(id: RequestId): RequestId {
  return typeof id === 'string' ? safeKey(id) : id;
}

/** The requests of one client connection that take the fast path. */
export class FastPath {
  readonly #handlers: Handlers;
  readonly #server: Server;
  readonly #replies: FastReplies;
  /**
   * The fast-path requests a cancellation can name, by the client's id (the latest request under each id; a string id
   * by its safeKey: one past 16,383 characters by its digest, as V8 hashes a longer string by its length alone).
   */
  readonly #inflight = new Map<RequestId, AbortController>();
  /** Every fast-path request in flight (stopped when the connection closes). */
  readonly #running = new Set<AbortController>();
  /**
   * Controllers of finished requests, never aborted and with no listener left on their signal, for the next
   * requests (making an AbortController and its signal is the costliest step of taking a request on Node 20,
   * ~3 µs; a sequential client reuses one).
   */
  readonly #spare: AbortController[] = [];

  constructor(handlers: Handlers, server: Server, replies: FastReplies) {
    this.#handlers = handlers;
    this.#server = server;
    this.#replies = replies;
  }

  /**
   * Takes `message` (as JSON.parse gave it) when it is the fast path's; false leaves it to the SDK, untouched.
   * Its answer goes to `replies` (by default the connection's: over HTTP each request brings its own).
   */
  take(message: unknown, replies: FastReplies = this.#replies): boolean {
    if (!isPlainObject(message) || message['jsonrpc'] !== '2.0') return false;
    const method = message['method'];
    // A cancellation as the SDK's schemas take one (a notification: no id, no other top-level key).
    if (method === 'notifications/cancelled') return this.#cancelled(message);
    const id = message['id'];
    // A later request under the id of one in flight here (a client that reuses ids) is the one a
    // cancellation of that id names, as in the SDK's Protocol (one controller per id, the latest).
    if (typeof method === 'string' && isId(id)) this.#inflight.delete(inflightKey(id));
    const plain = plainRequestOf(message);
    // Before `initialize` the SDK path answers (the client's capabilities are not known yet).
    if (plain === undefined || this.#server.getClientVersion() === undefined) return false;
    const { progressToken, params } = plain;
    if (plain.method === 'tools/call')
      this.#run(plain.id, progressToken, replies, 'tools/call', (request) =>
        this.#handlers.callTool(params as CallToolRequest['params'], request),
      );
    else
      this.#run(plain.id, progressToken, replies, 'resources/read', (request) =>
        this.#handlers.readResource(params as ReadResourceRequest['params'], request),
      );
    return true;
  }

  /** The connection closed: every request in flight is stopped (as the SDK's Protocol does), none is answered. */
  closed(): void {
    for (const controller of this.#running) controller.abort();
    this.#running.clear();
    this.#inflight.clear();
  }

  /**
   * A client's cancellation of one of the fast path's requests (others go to the SDK), read as the SDK's
   * Protocol reads one: its schema's params (`_meta` and unknown keys allowed, stripped), and a falsy
   * `requestId` (0, '') cancelling nothing.
   */
  #cancelled(message: Record<string, unknown>): boolean {
    if (!JSONRPCNotificationSchema.safeParse(message).success) return false;
    const parsed = CancelledNotificationSchema.safeParse(message);
    const requestId = parsed.data?.params.requestId;
    if (!requestId) return false;
    const controller = this.#inflight.get(inflightKey(requestId));
    if (!controller) return false;
    controller.abort(parsed.data?.params.reason);
    return true;
  }

  /**
   * Keeps the controller of a finished request for the next one when nothing can tell: it was never aborted
   * and every listener on its signal is gone (the gate's, the upstream call's). A listener left behind (a
   * request that asked by elicitation leaves the SDK's) keeps it out: it is dropped, as before.
   */
  #reuse(controller: AbortController): void {
    if (controller.signal.aborted || this.#spare.length >= SPARE_CONTROLLERS) return;
    if (getEventListeners(controller.signal, 'abort').length > 0) return;
    this.#spare.push(controller);
  }

  /** Runs one request through the session's handler and writes its answer under the client's id. */
  #run(
    id: RequestId,
    progressToken: RequestId | undefined,
    replies: FastReplies,
    method: 'tools/call' | 'resources/read',
    handle: (request: SessionRequest) => Promise<unknown>,
  ): void {
    const controller = this.#spare.pop() ?? new AbortController();
    const key = inflightKey(id);
    this.#inflight.set(key, controller);
    this.#running.add(controller);
    const request: SessionRequest = {
      signal: controller.signal,
      progressToken,
      sendNotification: async (notification) => {
        if (controller.signal.aborted) return;
        await replies.notify(id, notification);
      },
      authInfo: replies.authInfo,
      sessionId: replies.sessionId,
      raw: true,
    };
    let answer: Promise<unknown>;
    try {
      answer = handle(request);
    } catch (error) {
      answer = Promise.reject(error);
    }
    const done = (): void => {
      this.#running.delete(controller);
      if (this.#inflight.get(key) === controller) this.#inflight.delete(key);
    };
    const send = (message: JSONRPCMessage): void => {
      // A cancelled request is not answered (the SDK's rule). Its bookkeeping after the write (issue 25.2: off
      // the answer's critical path): nothing can name it between the two, in the same synchronous step.
      try {
        replies.answer(id, controller.signal.aborted ? undefined : message);
      } finally {
        done();
      }
      this.#reuse(controller);
    };
    const failed = (error: { code?: unknown; message?: unknown; data?: unknown }): void =>
      // The SDK Server's error response, field for field.
      send({
        jsonrpc: '2.0',
        id,
        error: {
          code: Number.isSafeInteger(error?.code) ? (error.code as number) : ErrorCode.InternalError,
          message: (error?.message as string | undefined) ?? 'Internal error',
          ...(error?.data !== undefined ? { data: error.data } : {}),
        },
      });
    answer.then((result) => {
      let answered: unknown;
      try {
        answered = method === 'tools/call' ? toolResult(result) : result;
      } catch (error) {
        return failed(error as Error);
      }
      send({ jsonrpc: '2.0', id, result: answered } as JSONRPCMessage);
    }, failed);
  }
}

/** A `tools/call` result as the SDK Server sends it: checked by its schema unless already in the schema's form. */
function toolResult(result: unknown): unknown {
  if (plainCallToolResult(result)) return result;
  const parsed = CallToolResultSchema.safeParse(result);
  if (!parsed.success)
    throw new McpError(ErrorCode.InvalidParams, `Invalid tools/call result: ${parsed.error.message}`);
  return parsed.data;
}

/**
 * The stdio transport of `toolgate gateway` (the SDK's StdioServerTransport, line for line, with the fast
 * path in front): each line is parsed once; a line the fast path takes never reaches the SDK, any other is
 * checked by the SDK's JSON-RPC schema and handed to the server as the SDK's transport hands it.
 */
export class FastStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  fast: FastPath | undefined;
  readonly #stdin: NodeJS.ReadableStream;
  readonly #stdout: NodeJS.WritableStream;
  readonly #lines = new StdioLines();
  #started = false;

  constructor(stdin: NodeJS.ReadableStream = process.stdin, stdout: NodeJS.WritableStream = process.stdout) {
    this.#stdin = stdin;
    this.#stdout = stdout;
  }

  readonly #ondata = (chunk: Buffer): void => {
    try {
      this.#lines.append(chunk);
    } catch (error) {
      this.onerror?.(error as Error);
      this.close().catch(() => undefined);
      return;
    }
    for (let line = this.#lines.next(); line !== null; line = this.#lines.next()) {
      try {
        const parsed: unknown = parseJsonText(line);
        if (this.fast?.take(parsed) === true) continue;
        this.onmessage?.(JSONRPCMessageSchema.parse(parsed) as JSONRPCMessage);
      } catch (error) {
        this.onerror?.(error as Error);
      }
    }
  };

  readonly #onerror = (error: Error): void => {
    this.onerror?.(error);
  };

  async start(): Promise<void> {
    if (this.#started) throw new Error('FastStdioTransport already started');
    this.#started = true;
    this.#stdin.on('data', this.#ondata);
    this.#stdin.on('error', this.#onerror);
  }

  async close(): Promise<void> {
    this.#stdin.off('data', this.#ondata);
    this.#stdin.off('error', this.#onerror);
    if (this.#stdin.listenerCount('data') === 0) this.#stdin.pause();
    this.#lines.clear();
    this.fast?.closed();
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.#stdout.write(serializeMessage(message))) resolve();
      else this.#stdout.once('drain', resolve);
    });
  }

  /** {@link send} for a caller that does not wait for the line to drain (a fast-path answer): one write, no promise. */
  write(message: JSONRPCMessage): void {
    // The upstream's result written from its own line where that is provably the same bytes (answer-lines.ts).
    this.#stdout.write(answerLineOf(message) ?? serializeMessage(message));
  }
}
