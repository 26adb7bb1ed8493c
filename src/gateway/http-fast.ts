/**
 * The gateway's fast path over Streamable HTTP (issue 25.3), the listener's side: on a 2025-era session, a
 * POST whose body is ONE `tools/call` or `resources/read` in the plain shape (the stdio fast path's
 * {@link FastPath.take}: the same shape checks, the same session handlers — gate, audit, limits, pins,
 * approvals) is answered without the SDK's server transport, on the request's own response, in the form that
 * transport would give it: an SSE stream (the gateway's transports never answer in JSON) with the same headers
 * (`mcp-session-id` included), progress as events before the answer, the headers held for the first event
 * (at most {@link HEADERS_WITHIN_MS}), a keep-alive comment every 15 s of a long call. It runs after
 * everything http.ts checks first (host, token, audience, tenant, the session's subject and route); what the
 * SDK transport would check next is checked here the same way (`Accept`, `Content-Type`, the session open and
 * initialised, `Mcp-Protocol-Version`), and a request that fails any of it — or is not the fast path's (a
 * batch, a notification, another method, other keys) — goes to the SDK transport unchanged, which answers
 * it (or refuses it) as before. A client's `notifications/cancelled` naming a fast-path request stops it
 * (202, as the SDK answers a notification); a client that goes away does not stop its call (nor does it on
 * the SDK path), its answer is dropped.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { DEFAULT_SSE_KEEP_ALIVE_MS } from '@modelcontextprotocol/sdk/server/sseKeepAlive.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import {
  isInitializeRequest,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type RequestId,
  type ServerNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { expiringDeadlines, type Expiring, type Queue, type Turn } from '../deadlines.js';
import { answerTextOf } from './answer-lines.js';
import { fastPathOf, plainRequestOf, type FastPath, type FastReplies } from './fastpath.js';
import { HEADERS_WITHIN_MS, type NodeStreamableHttp } from './http-session.js';

/** How many requests the HTTP fast path has taken in this process (tests and the bench assert it is taken). */
let taken = 0;

/** The number of requests the HTTP fast path has answered (or stopped) in this process so far. */
export function httpFastPathTaken(): number {
  return taken;
}

/** The fast path of one HTTP session, or undefined when its server has none or the fast path is off. */
export function httpFastPath(server: Server, transport: NodeStreamableHttp): HttpFastPath | undefined {
  const fast = fastPathOf(server);
  return fast ? new HttpFastPath(fast(NO_CONNECTION), server, transport) : undefined;
}

/** Every HTTP fast-path request brings its own replies; a connection-wide answer has nowhere to go. */
const NO_CONNECTION: FastReplies = {
  notify: () => Promise.reject(new Error('Not connected')),
  answer: () => undefined,
};

/** One session's fast path. */
export class HttpFastPath {
  readonly #fast: FastPath;
  readonly #server: Server;
  readonly #transport: NodeStreamableHttp;

  constructor(fast: FastPath, server: Server, transport: NodeStreamableHttp) {
    this.#fast = fast;
    this.#server = server;
    this.#transport = transport;
  }

  /**
   * Serves one request of the session (`body` the POST's parsed JSON) when it is the fast path's; false: the
   * SDK transport serves it, nothing was done or written.
   */
  serve(req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse, body: unknown): boolean {
    const transport = this.#transport;
    const sessionId = transport.sessionId;
    if (req.method !== 'POST' || transport.closed || sessionId === undefined) return false;
    if (body === null || typeof body !== 'object') return false;
    if (!asTheSdkTakesIt(req, sessionId)) return false;
    if (Array.isArray(body)) {
      this.#batch(body);
      return false;
    }
    if ((body as { method?: unknown }).method === 'notifications/cancelled') {
      if (!this.#fast.take(body)) return false;
      taken++;
      res.writeHead(202).end();
      return true;
    }
    const replies = new SseReplies(res, sessionId, req.auth, this.#server);
    if (!this.#fast.take(body, replies)) return false;
    taken++;
    replies.open();
    return true;
  }

  /**
   * A batch goes to the SDK transport whole; a cancellation in it of one of the fast path's requests is the
   * fast path's to stop, when the SDK would take the batch (every message valid, no `initialize`, within
   * its size) and no request in it reuses that id (the SDK would stop that one).
   */
  #batch(body: readonly unknown[]): void {
    if (body.length > MAX_BATCH_SIZE) return;
    const messages: JSONRPCMessage[] = [];
    for (const one of body) {
      const parsed = JSONRPCMessageSchema.safeParse(one);
      if (!parsed.success || isInitializeRequest(parsed.data)) return;
      messages.push(parsed.data);
    }
    const ids = new Set(messages.flatMap((m) => ('method' in m && 'id' in m ? [m.id] : [])));
    for (const one of body) {
      const message = one as { method?: unknown; params?: { requestId?: unknown } };
      if (message.method === 'notifications/cancelled' && !ids.has(message.params?.requestId as RequestId))
        this.#fast.take(one);
    }
  }

  /** The session closed: its fast-path requests are stopped, as the SDK's Protocol stops its own. */
  closed(): void {
    this.#fast.closed();
  }
}

/**
 * Whether the SDK transport would hand this POST of an open, initialised session to its server: it accepts
 * both JSON and SSE, its one `Content-Type` is JSON, it names this session, its protocol version (if any)
 * is one the SDK speaks. Read from the Node request as the SDK reads the web Request built from it.
 */
function asTheSdkTakesIt(req: IncomingMessage, sessionId: string): boolean {
  const accept = req.headers.accept;
  if (accept === undefined || !accept.includes('application/json') || !accept.includes('text/event-stream'))
    return false;
  // Node keeps the first of several Content-Types; the web Headers join them: only one is read alike.
  let types = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.length === 12 && raw[i]!.toLowerCase() === 'content-type') types++;
  if (types !== 1 || !isJsonContentType(req.headers['content-type'])) return false;
  if (req.headers['mcp-session-id'] !== sessionId) return false;
  const version = req.headers['mcp-protocol-version'];
  return version === undefined || (typeof version === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(version));
}

/**
 * Whether a POST is 2025-era traffic, read cheaply for the fast path's shape: a plain request (its `_meta`
 * at most a progress token, so no 2026-07-28 envelope claim) without a 2026-07-28 `MCP-Protocol-Version`
 * header — which the SDK's classification (`isLegacyPost`) calls legacy too. False: ask the SDK.
 */
export function plainLegacyPost(req: IncomingMessage, body: unknown): boolean {
  if (plainRequestOf(body) === undefined) return false;
  const version = req.headers['mcp-protocol-version'];
  return version === undefined || (typeof version === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(version));
}

/**
 * The fast-path answers still waiting for their first event: ONE timer for all of them (src/deadlines.ts; issue
 * 25: no timer, and no `close` listener, per request; an answer that comes in time just leaves the queue).
 */
const held = expiringDeadlines<SseReplies>();

/** One fast-path request's answer on its own response: an SSE stream, as the SDK transport writes it. */
class SseReplies implements FastReplies, Expiring<SseReplies> {
  readonly sessionId: string;
  readonly authInfo: AuthInfo | undefined;
  /** Its place in {@link held} (src/deadlines.ts): the headers go without an event when it comes due. */
  turn: Turn | null = null;
  queue: Queue<SseReplies> | null = null;
  prev: SseReplies | null = null;
  next: SseReplies | null = null;
  queued = false;
  readonly #res: ServerResponse;
  readonly #server: Server;
  #keepAlive: NodeJS.Timeout | undefined;
  #headed = false;

  constructor(res: ServerResponse, sessionId: string, authInfo: AuthInfo | undefined, server: Server) {
    this.#res = res;
    this.sessionId = sessionId;
    this.authInfo = authInfo;
    this.#server = server;
  }

  /** The request was taken: a slow answer's headers go after {@link HEADERS_WITHIN_MS}, then keep-alives. */
  open(): void {
    if (this.#res.writableEnded) return;
    held.add(this, HEADERS_WITHIN_MS);
  }

  /** No event within {@link HEADERS_WITHIN_MS}: the headers go now, then a keep-alive comment every 15 s. */
  expire(): void {
    const res = this.#res;
    if (res.destroyed || res.writableEnded) return;
    this.#head();
    res.flushHeaders();
    this.#keepAlive = setInterval(() => this.#write(': keepalive\n\n'), DEFAULT_SSE_KEEP_ALIVE_MS);
    this.#keepAlive.unref();
    res.once('close', () => this.#stop());
  }

  async notify(id: RequestId, notification: ServerNotification): Promise<void> {
    if (!this.#write(event({ ...notification, jsonrpc: '2.0' } as JSONRPCMessage)))
      throw new Error(`No connection established for request ID: ${String(id)}`);
  }

  answer(id: RequestId, message: JSONRPCMessage | undefined): void {
    this.#stop();
    const res = this.#res;
    if (res.destroyed || res.writableEnded) {
      // The client went away: the answer is dropped, as the SDK Server drops it (its onerror hears of it).
      if (message !== undefined)
        this.#server.onerror?.(
          new Error(`Failed to send response: Error: No connection established for request ID: ${String(id)}`),
        );
      return;
    }
    this.#head();
    // A cancelled request is not answered: its stream ends without an event.
    if (message === undefined) res.end();
    else res.end(answerEvent(message));
  }

  #head(): void {
    if (this.#headed) return;
    this.#headed = true;
    // The SDK transport's headers, named and ordered as http-session.ts's writeResponse writes them.
    this.#res.writeHead(200, {
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'content-type': 'text/event-stream',
      'mcp-session-id': this.sessionId,
      'x-accel-buffering': 'no',
    });
  }

  #write(chunk: string): boolean {
    const res = this.#res;
    if (res.destroyed || res.writableEnded) return false;
    this.#head();
    res.write(chunk);
    return true;
  }

  #stop(): void {
    held.remove(this);
    if (this.#keepAlive !== undefined) clearInterval(this.#keepAlive);
  }
}

/** One SSE event of the SDK transport (`event: message`, the message as JSON). */
function event(message: JSONRPCMessage): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

/**
 * {@link event} of a fast-path answer: its upstream's result written from the upstream's own text where that is
 * provably the bytes `JSON.stringify` writes (answer-lines.ts, as the stdio fast path writes its lines).
 */
function answerEvent(message: JSONRPCMessage): string {
  return `event: message\ndata: ${answerTextOf(message) ?? JSON.stringify(message)}\n\n`;
}
