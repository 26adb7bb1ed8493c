/**
 * The gateway's fast path towards a 2025-era Streamable HTTP upstream (issue 25.3): the SDK's client
 * transport (through upstream-fetch.ts's node:http keep-alive `fetch`) for everything, except the fast
 * path's own requests (upstream-raw.ts's `toolgate-raw:` ids), which are POSTed here with the headers the
 * SDK's transport would send (the configured ones, the session id and protocol version it holds, `Accept`
 * and `Content-Type`) and whose answer — JSON, or an SSE stream read as it comes — is handed message by
 * message to the transport's `onmessage`, as the SDK's transport hands it: through the gateway's tap (the
 * era check, progress and log lines relayed, the fast path's answer taken by RawRequests), every other
 * message (a request the upstream makes mid-call: elicitation, sampling) checked by the SDK's JSON-RPC
 * schema and given to the SDK Client, which answers it as on the SDK path. What is skipped is the SDK's
 * per-request machinery (web Request and Response, `TextDecoderStream` and `EventSourceParserStream`, the
 * zod parse of an answer already in the strict shape). A status other than 2xx fails the call as the SDK's
 * transport fails it (no retry: the request is never sent twice); a resumable stream that ends before the
 * answer is resumed as the SDK resumes it (GET with Last-Event-ID); any other that ends without the answer
 * fails the call with its outcome unknown.
 *
 * A 2026-07-28 `tools/call` or `resources/read` the SDK Client sends (its envelope in `_meta`, no per-request
 * headers of the caller's, no resumption) is POSTed here too (issue 25.3), with the headers the SDK's
 * transport derives from its body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`; a name the SDK would
 * base64-encode goes the SDK's way); the SDK Client still does the rest (envelope, timeout, cancellation by
 * closing the request's stream, result decoding and validation). A 400 whose body is a JSON-RPC error to
 * the request is handed on as that error, as the SDK's transport hands it on for a 2026-07-28 request. A raw
 * request of the gateway's own carrying that envelope (upstream-raw-modern.ts) is POSTed with the same
 * headers, and stopped by its request signal (its POST closed, a resumption of its stream with it).
 */
import { request as httpRequest, validateHeaderValue, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { urlToHttpOptions } from 'node:url';
import {
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
  type JSONRPCMessage,
} from '@modelcontextprotocol/client';
import { MODERN_VERSION } from '../mcp/index.js';
import { FRAMING_HEADERS, OwnHttpClient, type FixedHead } from './http-own-client.js';
import { agents, SILENT_MS, upstreamFetch, upstreamUrl } from './upstream-fetch.js';
import { isRawRequest, RAW_SETTLED, STOP_RAW, type RawStopping } from './upstream-raw.js';
import { hasModernEnvelope, modernNameOf } from './upstream-raw-modern.js';
import { nodeResponse, RawPost, readMessage } from './upstream-raw-post.js';

export { MAX_RAW_ANSWER } from './upstream-raw-post.js';

/** The headers a raw POST adds to the configured ones (they come after them on the wire, none among them). */
const ADDED_HEADERS = ['mcp-session-id', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'content-length'];

/** The SDK transport's first reconnection delay when the upstream names none (its default options). */
const FIRST_RECONNECTION_MS = 1000;

/** A new Streamable HTTP transport to `url` whose fast-path requests go raw ({@link RawHttpTransport}). */
export function rawHttpTransport(url: string | URL, headers?: Readonly<Record<string, string>>): RawHttpTransport {
  return new RawHttpTransport(upstreamUrl(url), headers);
}

/** The SDK's Streamable HTTP client transport, with the fast path's requests sent and read raw. */
export class RawHttpTransport extends StreamableHTTPClientTransport implements RawStopping {
  /** What `http.request(url, …)` makes of the URL, with the method and agent: made once (issue 25). */
  readonly #target: RequestOptions;
  readonly #send: typeof httpRequest;
  /** The gateway's own client (a plain `http:` upstream whose configured headers frame nothing), else node:http. */
  readonly #own: OwnHttpClient | undefined;
  /**
   * With {@link #own}: the head every raw POST begins and ends with (the configured headers, `Accept`, `Content-Type`
   * checked once, issue 25.3), when none of them is one a POST adds; else each POST's headers are checked and
   * written whole, as before.
   */
  readonly #fixed: FixedHead | undefined;
  /** The headers every raw request carries (the configured ones, `Accept`, `Content-Type`), lower-cased. */
  readonly #headers: Record<string, string> = {};
  readonly #inflight = new Map<string | number, RawPost>();
  /** What stops the resumption of a raw request sent with no signal (stopped by id), until it settles. */
  readonly #resumptions = new Map<string | number, AbortController>();
  /** Closed: no raw POST is sent any more (the SDK's transport refuses a send after close too). */
  #closed = false;

  constructor(url: URL, headers?: Readonly<Record<string, string>>) {
    super(url, { fetch: upstreamFetch, ...(headers ? { requestInit: { headers: { ...headers } } } : {}) });
    this.#target = requestTarget(url);
    this.#send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    new Headers(headers ? { ...headers } : undefined).forEach((value, name) => (this.#headers[name] = value));
    // As the SDK's `_send`: the configured Accept's types, then JSON and SSE, once each.
    const types = [...(this.#headers['accept']?.split(',').map((s) => s.trim().toLowerCase()) ?? [])];
    this.#headers['accept'] = [...new Set([...types, 'application/json', 'text/event-stream'])].join(', ');
    this.#headers['content-type'] = 'application/json';
    const own = url.protocol === 'http:' && !Object.keys(this.#headers).some((name) => FRAMING_HEADERS.has(name));
    this.#own = own ? new OwnHttpClient(this.#target, SILENT_MS) : undefined;
    this.#fixed = this.#own && fixedHeadOf(this.#own, this.#headers);
  }

  override send(
    message: JSONRPCMessage,
    options?: Parameters<StreamableHTTPClientTransport['send']>[1],
  ): Promise<void> {
    if (!isRawRequest(message)) {
      const name = modernNameOf(message, options);
      if (name !== undefined) return this.#post(message, name, options?.requestSignal);
      const sent = super.send(message, options);
      // The gateway stopped one of its raw requests (timed out, cancelled): the upstream is told, as on the
      // SDK path, and the raw POST still open for it is closed (nothing more is read of it).
      const stopped = cancelledRawId(message);
      if (stopped !== undefined) this.#inflight.get(stopped)?.stop();
      return sent;
    }
    // A raw request of the 2026-07-28 revision (its envelope in `_meta`) carries the headers the SDK's
    // transport derives from its body; one whose name the SDK would not send as it is never leaves. It is
    // stopped by its request signal, as the SDK's is: its POST closed, a resumption of it neither begun nor
    // left open.
    if (hasModernEnvelope(message)) {
      const name = modernNameOf(message, undefined);
      if (name === undefined)
        return Promise.reject(new Error('toolgate gateway: a raw 2026-07-28 request the SDK would not send as it is'));
      return this.#post(message, name, options?.requestSignal);
    }
    return this.#post(message, undefined, undefined);
  }

  override async close(): Promise<void> {
    this.#closed = true;
    for (const post of this.#inflight.values()) post.request?.destroy();
    this.#inflight.clear();
    this.#resumptions.clear();
    this.#own?.close();
    return super.close();
  }

  /**
   * POSTs one fast-path request; resolves once its answer was handed on (or the upstream accepted it with
   * 202 and no answer, as the SDK's transport resolves), rejects as the SDK's transport would.
   */
  #post(message: JSONRPCMessage, name: string | undefined, signal: AbortSignal | undefined): Promise<void> {
    // Stopped before it was sent (the SDK's fetch would not send it either; its caller has given up on it).
    if (signal?.aborted) return Promise.resolve();
    // After close nothing reaches the upstream: the tool must not run for a call nobody can answer.
    if (this.#closed)
      return Promise.reject(new SdkError(SdkErrorCode.ConnectionClosed, 'the transport to the upstream is closed'));
    const request = message as { id: string | number; method: string };
    const id = request.id;
    const fixed = this.#fixed;
    if (fixed !== undefined) {
      // The own client with the fixed head: the added headers checked and written, the body copied once.
      const body = JSON.stringify(message);
      const length = Buffer.byteLength(body);
      const own = this.#own!;
      return new Promise<void>((resolve, reject) => {
        // A header node:http would refuse throws here, before anything is sent or listened to (as its request does).
        const bytes = own.requestWith(fixed, this.#added(request.method, name, length), body, length);
        const post = new RawPost(this, id, name !== undefined, signal, resolve, reject);
        post.request = own.send(bytes, post);
        this.#inflight.set(id, post);
      });
    }
    const headers: Record<string, string> = { ...this.#headers };
    const session = this.sessionId;
    if (session) headers['mcp-session-id'] = session;
    const version = this.protocolVersion;
    if (version) headers['mcp-protocol-version'] = version;
    if (name !== undefined) {
      // As the SDK's `_applyBodyDerivedHeaders`: the envelope's version, the method, the name (plain here).
      headers['mcp-protocol-version'] = MODERN_VERSION;
      headers['mcp-method'] = request.method;
      headers['mcp-name'] = name;
    }
    const body = Buffer.from(JSON.stringify(message));
    headers['content-length'] = String(body.byteLength);
    const own = this.#own;
    return new Promise<void>((resolve, reject) => {
      // A header node:http would refuse throws here, before anything is sent or listened to (as its request does).
      const bytes = own?.request(headers, body);
      const post = new RawPost(this, id, name !== undefined, signal, resolve, reject);
      if (own !== undefined) post.request = own.send(bytes!, post);
      else {
        const request = this.#send({ ...this.#target, headers });
        post.request = request;
        request.setNoDelay(true);
        request.setTimeout(SILENT_MS, () =>
          request.destroy(new Error(`the upstream sent nothing for ${SILENT_MS / 1000} s`)),
        );
        request.once('error', (error) => post.failed(error));
        request.once('response', (res) => post.response(nodeResponse(res)));
        request.end(body);
      }
      this.#inflight.set(id, post);
    });
  }

  /**
   * Stops one of the gateway's raw requests sent with no signal (upstream-raw.ts, a 2026-07-28 request): as
   * aborting its request signal would, its POST closed and a resumption of its stream neither begun nor left
   * open; nothing for a request no longer in flight.
   */
  [STOP_RAW](id: string): void {
    this.#inflight.get(id)?.stop();
    const resumption = this.#resumptions.get(id);
    if (resumption === undefined) return;
    this.#resumptions.delete(id);
    resumption.abort();
  }

  [RAW_SETTLED](id: string): void {
    // A POST still open for it (its answer read now, or come on another stream) asks nothing to be kept any more.
    this.#inflight.get(id)?.unwanted();
    if (this.#resumptions.size !== 0) this.#resumptions.delete(id);
  }

  /**
   * @internal The signal of a resumption of the stream of a 2026-07-28 request sent with no signal: for one of
   * the gateway's raw requests (stopped by id), one that {@link STOP_RAW} aborts until the request settles.
   */
  resumption(id: string | number): AbortSignal | undefined {
    if (typeof id !== 'string' || !isRawRequest({ jsonrpc: '2.0', id, method: '' } as JSONRPCMessage)) return undefined;
    const stopper = new AbortController();
    this.#resumptions.set(id, stopper);
    return stopper.signal;
  }

  /**
   * The header lines a raw POST adds after the fixed ones, in the order the generic path sets them (the session,
   * the protocol version — a 2026-07-28 request's own in its place —, the method and name, the length), each
   * value checked as node:http checks it (a refused one throws).
   */
  #added(method: string, name: string | undefined, length: number): string {
    let added = '';
    const session = this.sessionId;
    if (session) added += headerLine('mcp-session-id', session);
    const version = name !== undefined ? MODERN_VERSION : this.protocolVersion;
    if (version) added += headerLine('mcp-protocol-version', version);
    if (name !== undefined) added += headerLine('mcp-method', method) + headerLine('mcp-name', name);
    return `${added}content-length: ${length}\r\n`;
  }

  /** @internal A raw POST settled: it is no longer in flight. */
  ended(id: string | number, post: RawPost): void {
    if (this.#inflight.get(id) === post) this.#inflight.delete(id);
  }

  /**
   * @internal A message of an SSE answer (its text), handed on as the SDK's transport hands it: not run through the
   * SDK's schema when it is an answer to `id` in the shape that schema keeps.
   */
  deliver(text: string, id: string | number): JSONRPCMessage | undefined {
    let message: JSONRPCMessage;
    try {
      message = readMessage(text, id);
    } catch (error) {
      // As the SDK's transport: a message it cannot read is an error of the transport, the stream goes on.
      this.onerror?.(error as Error);
      return undefined;
    }
    this.onmessage?.(message);
    return message;
  }

  /**
   * @internal A resumable stream closed before its answer: resumed as the SDK's transport resumes it — with
   * the request's signal, so that a request its caller stopped resumes nothing, and the GET that resumes it
   * is closed with it (as the SDK's reconnection is; `resumeStream` takes no signal).
   */
  resume(lastId: string, retry: number | undefined, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resume) => setTimeout(resume, retry ?? FIRST_RECONNECTION_MS)).then(() => {
      if (signal?.aborted) return;
      return (this as unknown as SseOpener)._startOrAuthSse({ resumptionToken: lastId, requestSignal: signal });
    });
  }
}

/**
 * What `http.request(url, …)` makes of the URL (`urlToHttpOptions`), less what the request never reads (`href`,
 * `pathname`, `search`, `hash`: the request line is `path`), with the method and the agent: fewer keys for
 * every request to copy (issue 25).
 */
export function requestTarget(url: URL): RequestOptions {
  const { protocol, hostname, port, path, auth } = urlToHttpOptions(url);
  const target: RequestOptions = {
    protocol,
    hostname,
    path,
    method: 'POST',
    agent: agents[url.protocol as 'http:' | 'https:'],
  };
  if (port !== undefined) target.port = port;
  if (auth !== undefined) target.auth = auth;
  return target;
}

/** The fixed head of the own client's POSTs, or undefined (a configured header a POST adds, or one refused). */
function fixedHeadOf(own: OwnHttpClient, headers: Readonly<Record<string, string>>): FixedHead | undefined {
  if (ADDED_HEADERS.some((name) => headers[name] !== undefined)) return undefined;
  try {
    return own.fixedHead(headers);
  } catch {
    // Refused on every POST, as before: each one's headers checked whole, the first refused one thrown.
    return undefined;
  }
}

/** One header line as node:http writes it, its value checked as it checks it (the name is one of ours). */
function headerLine(name: string, value: string): string {
  validateHeaderValue(name, value);
  return `${name}: ${value}\r\n`;
}

/** The SDK transport's GET (`resumeStream` without the request's signal). */
interface SseOpener {
  _startOrAuthSse(options: { resumptionToken: string; requestSignal: AbortSignal | undefined }): Promise<void>;
}

/** The id a `notifications/cancelled` names when it is one of the gateway's raw requests. */
function cancelledRawId(message: JSONRPCMessage): string | undefined {
  if ((message as { method?: unknown }).method !== 'notifications/cancelled') return undefined;
  const id = (message as { params?: { requestId?: unknown } }).params?.requestId;
  return typeof id === 'string' && isRawRequest({ jsonrpc: '2.0', id, method: '' } as JSONRPCMessage) ? id : undefined;
}
