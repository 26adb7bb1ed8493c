/**
 * One raw POST of upstream-raw-http.ts's RawHttpTransport in flight, and the reading of its answer: the head's
 * status and content type, then JSON or an SSE stream read as it comes, each message handed on as the SDK's
 * transport hands it. The answer comes from either client (http-own-client.ts's on a plain `http:` upstream,
 * node:http's on `https:`) through the same {@link RawResponse}.
 */
import type { IncomingMessage } from 'node:http';
import {
  isJSONRPCErrorResponse,
  parseJSONRPCMessage,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
  type JSONRPCMessage,
} from '@modelcontextprotocol/client';
import { GrowingBytes } from '../growing-bytes.js';
import { parseJsonText } from '../json-text.js';
import { noteAnswerLine } from './answer-lines.js';
import type { BodySink, RawExchange, RawHandler, RawResponse } from './http-own-client.js';
import { isPlainObject, plainResultMeta } from './raw-results.js';
import { rawAnswer } from './upstream-raw.js';
import { contentTypeOf, essenceOf, SseEvents, textOf } from './upstream-sse.js';

/**
 * A message of an SSE event (its text) as the SDK's schema gives it; throws as it throws. Read with its keys as written
 * (the SDK's `deserializeMessage` is `JSON.parse` and the schema).
 */
export function readMessage(text: string, id: string | number): JSONRPCMessage {
  const parsed: unknown = parseJsonText(text);
  if (rawAnswer(parsed)) {
    // An SSE event's text kept for the answer to be written from it where that is the same bytes (answer-lines.ts,
    // as upstream-raw.ts keeps a stdio line).
    noteAnswerLine((parsed as { result?: unknown }).result, text);
    return parsed;
  }
  return plainAnswerTo(parsed, id) ? (parsed as JSONRPCMessage) : parseJSONRPCMessage(parsed);
}

/**
 * A message of a JSON body, as parseJsonText gave it: never a text to read again (a string is no message: the SDK's
 * schema refuses it, as the SDK's transport does; read as a text, a body holding the message JSON-encoded twice was
 * taken for it).
 */
export function readBodyMessage(value: unknown, id: string | number): JSONRPCMessage {
  if (rawAnswer(value) || plainAnswerTo(value, id)) return value as JSONRPCMessage;
  // Through a copy as JSON first, as before (a -0 in it is 0).
  return parseJSONRPCMessage(parseJsonText(JSON.stringify(value)));
}

/** What a raw POST reports to: its transport (upstream-raw-http.ts's RawHttpTransport). */
export interface RawPostOwner {
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;
  /** The POST settled: it is no longer in flight. */
  ended(id: string | number, post: RawPost): void;
  /** A message of the answer handed on (undefined: not readable, reported as an error of the transport). */
  deliver(text: string, id: string | number): JSONRPCMessage | undefined;
  /** A resumable stream closed before its answer: resumed with a GET naming its last event id. */
  resume(lastId: string, retry: number | undefined, signal: AbortSignal | undefined): Promise<void>;
  /** The signal of the resumption of a 2026-07-28 request sent with no signal of its own (or none). */
  resumption(id: string | number): AbortSignal | undefined;
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
export class RawPost implements RawHandler, BodySink {
  /** The request on its connection (set once sent). */
  request: RawExchange | undefined;
  readonly #transport: RawPostOwner;
  readonly #id: string | number;
  /** A 2026-07-28 request: a 400 may carry its JSON-RPC error. */
  readonly #modern: boolean;
  /** The SDK's per-request signal (a 2026-07-28 request is cancelled by closing its stream). */
  readonly #signal: AbortSignal | undefined;
  readonly #resolve: () => void;
  readonly #reject: (error: Error) => void;
  #settled = false;
  #answered = false;
  /** The request settled without this POST (its answer came on another stream): nothing kept to stop its resumption. */
  #unwanted = false;
  #res: RawResponse | undefined;
  #events: SseEvents | undefined;
  /** A JSON answer's body so far (one growing buffer: an answer in one-byte chunks holds about its bytes). */
  #body: GrowingBytes | undefined;
  #json = false;

  constructor(
    transport: RawPostOwner,
    id: string | number,
    modern: boolean,
    signal: AbortSignal | undefined,
    resolve: () => void,
    reject: (error: Error) => void,
  ) {
    this.#transport = transport;
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
    this.request?.destroy();
    this.#res?.destroy();
    this.#resolve();
  }

  /**
   * The gateway's request settled (answered, failed, stopped) while this POST is open: a resumption of its stream is
   * not one the transport keeps anything to stop for (RAW_SETTLED dropped it; a later one would never be dropped).
   */
  unwanted(): void {
    this.#unwanted = true;
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

  /**
   * The request failed before its answer's head (a connection refused, reset or closed, a timeout), or its
   * answer's read did (a connection closed mid-answer is an error, not a short answer): the answer closed.
   */
  error(error: Error): void {
    this.#fail(error);
  }

  /** Reads the answer, handing each message on; fails when it holds no answer to the request. */
  response(res: RawResponse): void {
    if (this.#settled) return void res.destroy();
    this.#res = res;
    const status = res.statusCode;
    if (status < 200 || status > 299) {
      readText(res).then((text) => {
        if (status === 400 && this.#modern && this.#errorAnswer(text)) return this.#done();
        this.failed(
          new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${text}`, {
            status,
            statusText: res.statusMessage,
            text,
          }),
        );
      }, this.#fail);
      return;
    }
    if (status === 202) {
      // No answer (MCP: a 202 has no body): a body byte means the connection is not to be kept — closed, so a
      // body that trickles on does not hold a socket after the call settled. Nor does a body's framing (a
      // chunk extension or trailers trickled a byte at a time): an answer not complete once the bytes that
      // brought its head are read is closed, its connection not kept.
      res.read({ data: () => res.destroy(), end: noop, error: noop });
      queueMicrotask(() => {
        if (!res.complete) res.destroy();
      });
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
    res.read(this);
  }

  /** A 400's body that is a JSON-RPC error to this request: handed on as the SDK's transport hands it on. */
  #errorAnswer(text: string): boolean {
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(parseJsonText(text));
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

  readonly #each = (data: string): void => {
    if (this.#settled) return;
    this.#handed(this.#transport.deliver(data, this.#id));
  };

  #handed(message: JSONRPCMessage | undefined): void {
    const { id, method } = (message ?? {}) as { id?: unknown; method?: unknown };
    if (message !== undefined && id === this.#id && method === undefined) this.#answered = true;
  }

  /** A chunk of a 2xx answer's body. */
  data(chunk: Buffer): void {
    if (this.#settled) return;
    if (this.#events !== undefined) {
      this.#events.push(chunk);
      if (this.#events.held > MAX_RAW_ANSWER) this.#tooLarge();
      return;
    }
    const body = (this.#body ??= new GrowingBytes(MAX_RAW_ANSWER));
    if (body.size + chunk.length > MAX_RAW_ANSWER) return this.#tooLarge();
    body.push(chunk);
  }

  #tooLarge(): void {
    this.request?.destroy();
    this.#fail(
      new SdkError(
        SdkErrorCode.ConnectionClosed,
        `the upstream's answer is over ${MAX_RAW_ANSWER} bytes: the call's outcome is unknown`,
      ),
    );
  }

  /** A 2xx answer's body ended: its messages handed on; the call answered, resumed, or failed. */
  end(): void {
    if (this.#settled) return;
    if (this.#json) {
      let data: unknown;
      try {
        data = parseJsonText(textOf(this.#body?.bytes() ?? Buffer.alloc(0)));
      } catch (error) {
        return this.failed(error as Error);
      }
      this.#body = undefined;
      // As the SDK's transport: every message of a JSON answer is read before any is handed on; one it
      // cannot read fails the send, and none of the batch is handed on.
      let messages: JSONRPCMessage[];
      try {
        messages = (Array.isArray(data) ? data : [data]).map((one) => readBodyMessage(one, this.#id));
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
      // A request settled already (answered on another stream) is resumed as before it was stopped by id: with a
      // signal of its own that nobody aborts (as nobody aborted its own after it settled), nothing kept for it.
      // (Not with none: each GET held would listen on the transport's own signal, Node's warning past ten.)
      const byId = this.#modern && this.#signal === undefined;
      const signal = !byId
        ? this.#signal
        : this.#unwanted
          ? new AbortController().signal
          : this.#transport.resumption(this.#id);
      this.#transport.resume(lastId, this.#events?.retry, signal).then(() => this.#done(), this.#fail);
      return;
    }
    this.failed(
      new SdkError(
        SdkErrorCode.ConnectionClosed,
        'the upstream ended its answer stream without answering the call: its outcome is unknown',
      ),
    );
  }
}

/** An error answer's text (at most {@link MAX_RAW_ANSWER} bytes of it; more closes the answer). */
function readText(res: RawResponse): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const body = new GrowingBytes(MAX_RAW_ANSWER);
    let over = false;
    res.read({
      data(chunk) {
        if (over) return;
        if (body.size + chunk.length <= MAX_RAW_ANSWER) return void body.push(chunk);
        over = true;
        res.destroy();
        resolve(textOf(body.bytes()));
      },
      end: () => resolve(textOf(body.bytes())),
      error: reject,
    });
  });
}

/** An answer of node:http's client as the raw POST reads it (an `https:` upstream). */
export function nodeResponse(res: IncomingMessage): RawResponse {
  return {
    statusCode: res.statusCode ?? 500,
    statusMessage: res.statusMessage ?? '',
    rawHeaders: res.rawHeaders,
    get complete(): boolean {
      return res.complete;
    },
    read(sink: BodySink): void {
      res.on('data', (chunk: Buffer) => sink.data(chunk));
      res.once('end', () => sink.end());
      res.once('error', (error) => sink.error(error));
      // A connection closed before the whole answer came is an error, not a short answer.
      res.once('close', () => {
        if (!res.complete) sink.error(new Error('the upstream closed the connection mid-answer'));
      });
    },
    destroy(): void {
      res.destroy();
    },
  };
}

function noop(): void {}

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
