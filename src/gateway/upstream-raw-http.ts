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
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { urlToHttpOptions } from 'node:url';
import {
  deserializeMessage,
  isJSONRPCErrorResponse,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
  StreamableHTTPClientTransport,
  type JSONRPCMessage,
} from '@modelcontextprotocol/client';
import { MODERN_VERSION } from '../mcp/index.js';
import { agents, SILENT_MS, upstreamFetch, upstreamUrl } from './upstream-fetch.js';
import { isPlainObject } from './raw-results.js';
import { isRawRequest, rawAnswer } from './upstream-raw.js';
import { hasModernEnvelope, modernNameOf } from './upstream-raw-modern.js';
import { contentTypeOf, essenceOf, SseEvents, textOf } from './upstream-sse.js';

/** The SDK transport's first reconnection delay when the upstream names none (its default options). */
const FIRST_RECONNECTION_MS = 1000;

/** A new Streamable HTTP transport to `url` whose fast-path requests go raw ({@link RawHttpTransport}). */
export function rawHttpTransport(url: string | URL, headers?: Readonly<Record<string, string>>): RawHttpTransport {
  return new RawHttpTransport(upstreamUrl(url), headers);
}

/** The SDK's Streamable HTTP client transport, with the fast path's requests sent and read raw. */
export class RawHttpTransport extends StreamableHTTPClientTransport {
  /** What `http.request(url, …)` makes of the URL, with the method and agent: made once (issue 25). */
  readonly #target: RequestOptions;
  readonly #send: typeof httpRequest;
  /** The headers every raw request carries (the configured ones, `Accept`, `Content-Type`), lower-cased. */
  readonly #headers: Record<string, string> = {};
  readonly #inflight = new Map<string | number, RawPost>();
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
    for (const post of this.#inflight.values()) post.request.destroy();
    this.#inflight.clear();
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
    const headers: Record<string, string> = { ...this.#headers };
    const session = this.sessionId;
    if (session) headers['mcp-session-id'] = session;
    const version = this.protocolVersion;
    if (version) headers['mcp-protocol-version'] = version;
    const request = message as { id: string | number; method: string };
    if (name !== undefined) {
      // As the SDK's `_applyBodyDerivedHeaders`: the envelope's version, the method, the name (plain here).
      headers['mcp-protocol-version'] = MODERN_VERSION;
      headers['mcp-method'] = request.method;
      headers['mcp-name'] = name;
    }
    const body = Buffer.from(JSON.stringify(message));
    headers['content-length'] = String(body.byteLength);
    const id = request.id;
    return new Promise<void>((resolve, reject) => {
      const request = this.#send({ ...this.#target, headers });
      const post = new RawPost(this, request, id, name !== undefined, signal, resolve, reject);
      this.#inflight.set(id, post);
      request.setNoDelay(true);
      request.setTimeout(SILENT_MS, () =>
        request.destroy(new Error(`the upstream sent nothing for ${SILENT_MS / 1000} s`)),
      );
      request.once('error', (error) => post.failed(error));
      request.once('response', (res) => post.read(res));
      request.end(body);
    });
  }

  /** @internal A raw POST settled: it is no longer in flight. */
  ended(id: string | number, post: RawPost): void {
    if (this.#inflight.get(id) === post) this.#inflight.delete(id);
  }

  /**
   * @internal A message of an answer (its text, or as JSON.parse gave it), handed on as the SDK's transport
   * hands it: not run through the SDK's schema when it is an answer to `id` in the shape that schema keeps.
   */
  deliver(data: unknown, id: string | number): JSONRPCMessage | undefined {
    let message: JSONRPCMessage;
    try {
      message = readMessage(data, id);
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

/** The SDK transport's GET (`resumeStream` without the request's signal). */
interface SseOpener {
  _startOrAuthSse(options: { resumptionToken: string; requestSignal: AbortSignal | undefined }): Promise<void>;
}

/** A message of an answer (its text, or as JSON.parse gave it) as the SDK's schema gives it; throws as it throws. */
function readMessage(data: unknown, id: string | number): JSONRPCMessage {
  const parsed: unknown = typeof data === 'string' ? JSON.parse(data) : data;
  return rawAnswer(parsed) || plainAnswerTo(parsed, id)
    ? (parsed as JSONRPCMessage)
    : deserializeMessage(typeof data === 'string' ? data : JSON.stringify(data));
}

/** The id a `notifications/cancelled` names when it is one of the gateway's raw requests. */
function cancelledRawId(message: JSONRPCMessage): string | undefined {
  if ((message as { method?: unknown }).method !== 'notifications/cancelled') return undefined;
  const id = (message as { params?: { requestId?: unknown } }).params?.requestId;
  return typeof id === 'string' && isRawRequest({ jsonrpc: '2.0', id, method: '' } as JSONRPCMessage) ? id : undefined;
}

/**
 * The most an upstream's answer to one raw request may hold in memory at once (the SDK's stdio buffer bound,
 * as the stdio upstreams are read): a JSON answer's body, or an SSE stream's unfinished line and event. More
 * fails the call (its outcome unknown) and closes the request.
 */
export const MAX_RAW_ANSWER = STDIO_DEFAULT_MAX_BUFFER_SIZE;

/**
 * One raw POST in flight: its answer read with the response's own events (no async iterator per request),
 * settled once — answered, failed, or stopped by the gateway (quietly: the call was already failed).
 */
class RawPost {
  readonly request: ClientRequest;
  readonly #transport: RawHttpTransport;
  readonly #id: string | number;
  /** A 2026-07-28 request: a 400 may carry its JSON-RPC error. */
  readonly #modern: boolean;
  /** The SDK's per-request signal (a 2026-07-28 request is cancelled by closing its stream). */
  readonly #signal: AbortSignal | undefined;
  readonly #resolve: () => void;
  readonly #reject: (error: Error) => void;
  #settled = false;
  #answered = false;
  #res: IncomingMessage | undefined;
  #events: SseEvents | undefined;
  #chunks: Buffer[] = [];
  #size = 0;
  #json = false;

  constructor(
    transport: RawHttpTransport,
    request: ClientRequest,
    id: string | number,
    modern: boolean,
    signal: AbortSignal | undefined,
    resolve: () => void,
    reject: (error: Error) => void,
  ) {
    this.#transport = transport;
    this.request = request;
    this.#id = id;
    this.#modern = modern;
    this.#signal = signal;
    signal?.addEventListener('abort', this.#aborted, { once: true });
    this.#resolve = resolve;
    this.#reject = reject;
  }

  readonly #aborted = (): void => this.stop();

  /** Settles the request once (false: it already was); it is no longer in flight. */
  #settle(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    this.#transport.ended(this.#id, this);
    this.#signal?.removeEventListener('abort', this.#aborted);
    return true;
  }

  /** The gateway stopped the request: the POST is closed, nothing more is handed on or reported. */
  stop(): void {
    if (!this.#settle()) return;
    this.request.destroy();
    this.#res?.destroy();
    this.#resolve();
  }

  /** Fails the request (once: a connection reset mid-answer fails both the request and the answer's read). */
  failed(error: Error): void {
    if (!this.#settle()) return;
    this.#transport.onerror?.(error);
    this.#reject(error);
  }

  #done(): void {
    if (!this.#settle()) return;
    this.#resolve();
  }

  /** Reads the answer, handing each message on; fails when it holds no answer to the request. */
  read(res: IncomingMessage): void {
    if (this.#settled) return void res.destroy();
    this.#res = res;
    const status = res.statusCode ?? 500;
    if (status < 200 || status > 299) {
      readText(res).then((text) => {
        if (status === 400 && this.#modern && this.#errorAnswer(text)) return this.#done();
        this.failed(
          new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${text}`, {
            status,
            statusText: res.statusMessage ?? '',
            text,
          }),
        );
      }, this.#fail);
      return;
    }
    if (status === 202) {
      // No answer (MCP: a 202 has no body): a body byte means the connection is not to be kept — closed, so a
      // body that trickles on does not hold a socket after the call settled.
      res.once('data', () => res.destroy());
      res.resume();
      return this.#done();
    }
    // As the SDK's transport reads it: the web Headers join several (Node keeps the first), then the media type.
    const contentType = contentTypeOf(res);
    const essence = essenceOf(contentType);
    if (essence === 'text/event-stream') this.#events = new SseEvents(this.#each);
    else if (essence === 'application/json') this.#json = true;
    // The call fails here, its body not read on (#fail closes it: a body that never ends holds no socket).
    else
      return this.#fail(
        new SdkError(SdkErrorCode.ClientHttpUnexpectedContent, `Unexpected content type: ${contentType}`, {
          contentType,
        }),
      );
    res.on('data', this.#data);
    res.once('end', this.#end);
    res.once('error', this.#fail);
    // A connection closed before the whole answer came is an error, not a short answer.
    res.once('close', this.#closed);
  }

  /** A 400's body that is a JSON-RPC error to this request: handed on as the SDK's transport hands it on. */
  #errorAnswer(text: string): boolean {
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(text);
    } catch {
      return false;
    }
    if (!isJSONRPCErrorResponse(message) || message.id !== this.#id) return false;
    this.#transport.onmessage?.(message);
    return true;
  }

  readonly #fail = (error: Error): void => {
    this.#res?.destroy();
    this.failed(error);
  };

  readonly #closed = (): void => {
    if (!this.#res!.complete) this.#fail(new Error('the upstream closed the connection mid-answer'));
  };

  readonly #each = (data: string): void => {
    if (this.#settled) return;
    this.#handed(this.#transport.deliver(data, this.#id));
  };

  #handed(message: JSONRPCMessage | undefined): void {
    const { id, method } = (message ?? {}) as { id?: unknown; method?: unknown };
    if (message !== undefined && id === this.#id && method === undefined) this.#answered = true;
  }

  readonly #data = (chunk: Buffer): void => {
    if (this.#settled) return;
    if (this.#events !== undefined) {
      this.#events.push(chunk);
      if (this.#events.held > MAX_RAW_ANSWER) this.#tooLarge();
      return;
    }
    this.#size += chunk.length;
    if (this.#size > MAX_RAW_ANSWER) return this.#tooLarge();
    this.#chunks.push(chunk);
  };

  #tooLarge(): void {
    this.request.destroy();
    this.#fail(
      new SdkError(
        SdkErrorCode.ConnectionClosed,
        `the upstream's answer is over ${MAX_RAW_ANSWER} bytes: the call's outcome is unknown`,
      ),
    );
  }

  readonly #end = (): void => {
    if (this.#settled) return;
    if (this.#json) {
      let data: unknown;
      try {
        data = JSON.parse(textOf(this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks)));
      } catch (error) {
        return this.failed(error as Error);
      }
      this.#chunks = [];
      // As the SDK's transport: every message of a JSON answer is read before any is handed on; one it
      // cannot read fails the send, and none of the batch is handed on.
      let messages: JSONRPCMessage[];
      try {
        messages = (Array.isArray(data) ? data : [data]).map((one) => readMessage(one, this.#id));
      } catch (error) {
        return this.failed(error as Error);
      }
      for (const one of messages) {
        if (this.#settled) return;
        this.#transport.onmessage?.(one);
        this.#handed(one);
      }
    }
    if (this.#answered) return this.#done();
    // A resumable stream (its events carry ids: the upstream keeps an event store, SEP-1699) closed before
    // the answer: the SDK's transport resumes it, after the upstream's `retry` or its own first delay, with
    // a GET naming the last event id; the answer comes through onmessage as on the SDK path.
    const lastId = this.#events?.lastId;
    if (lastId !== undefined) {
      this.#transport.resume(lastId, this.#events?.retry, this.#signal).then(() => this.#done(), this.#fail);
      return;
    }
    this.failed(
      new SdkError(
        SdkErrorCode.ConnectionClosed,
        'the upstream ended its answer stream without answering the call: its outcome is unknown',
      ),
    );
  };
}

/** An error answer's text (at most {@link MAX_RAW_ANSWER} bytes of it). */
async function readText(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    size += (chunk as Buffer).length;
    if (size > MAX_RAW_ANSWER) break;
    chunks.push(chunk as Buffer);
  }
  return textOf(Buffer.concat(chunks));
}

/**
 * Whether `message` is the answer to request `id` in a shape the SDK's JSON-RPC schema gives back as it is
 * (upstream-raw.ts's `rawAnswer`, for an id of the SDK Client's; stricter): `jsonrpc`, `id` and a plain
 * `result` or an `error` of a safe-integer `code`, a string `message`, perhaps `data`; no own `__proto__` in
 * what the schema copies; a result's `_meta` absent, or none of the keys the schemas check but a well-formed
 * serverInfo (a `name` and a `version`, nothing else). Anything else is parsed by the SDK's schema.
 */
function plainAnswerTo(message: unknown, id: string | number): boolean {
  if (!isPlainObject(message) || message['jsonrpc'] !== '2.0' || message['id'] !== id) return false;
  if (Object.keys(message).length !== 3) return false;
  const result = message['result'];
  if (result !== undefined) return ownPlain(result) && plainResultMeta(result['_meta']);
  const error = message['error'];
  return (
    ownPlain(error) &&
    Number.isSafeInteger(error['code']) &&
    typeof error['message'] === 'string' &&
    Object.keys(error).every((k) => k === 'code' || k === 'message' || k === 'data')
  );
}

/** A plain object without an own `__proto__` (which a schema's copy would not keep). */
function ownPlain(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && !Object.hasOwn(value, '__proto__');
}

const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** A result's `_meta` the JSON-RPC schema keeps as it is (see {@link plainAnswerTo}). */
function plainResultMeta(meta: unknown): boolean {
  if (meta === undefined) return true;
  if (!ownPlain(meta)) return false;
  for (const key of Object.keys(meta)) {
    if (key === SERVER_INFO) {
      const info = meta[key];
      if (!ownPlain(info) || Object.keys(info).length !== 2) return false;
      if (typeof info['name'] !== 'string' || typeof info['version'] !== 'string') return false;
    } else if (key === 'progressToken' || key.startsWith('io.modelcontextprotocol/')) return false;
  }
  return true;
}
