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
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import {
  deserializeMessage,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
  StreamableHTTPClientTransport,
  type JSONRPCMessage,
} from '@modelcontextprotocol/client';
import { mediaTypeEssence } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import { agents, SILENT_MS, upstreamFetch, upstreamUrl } from './upstream-fetch.js';
import { isRawRequest, rawAnswer } from './upstream-raw.js';

/** The SDK transport's first reconnection delay when the upstream names none (its default options). */
const FIRST_RECONNECTION_MS = 1000;

/** A new Streamable HTTP transport to `url` whose fast-path requests go raw ({@link RawHttpTransport}). */
export function rawHttpTransport(url: string | URL, headers?: Readonly<Record<string, string>>): RawHttpTransport {
  return new RawHttpTransport(upstreamUrl(url), headers);
}

/** The SDK's Streamable HTTP client transport, with the fast path's requests sent and read raw. */
export class RawHttpTransport extends StreamableHTTPClientTransport {
  readonly #url: URL;
  /** The headers every raw request carries (the configured ones, `Accept`, `Content-Type`), lower-cased. */
  readonly #headers: Record<string, string> = {};
  readonly #inflight = new Map<string, RawPost>();

  constructor(url: URL, headers?: Readonly<Record<string, string>>) {
    super(url, { fetch: upstreamFetch, ...(headers ? { requestInit: { headers: { ...headers } } } : {}) });
    this.#url = url;
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
      const sent = super.send(message, options);
      // The gateway stopped one of its raw requests (timed out, cancelled): the upstream is told, as on the
      // SDK path, and the raw POST still open for it is closed (nothing more is read of it).
      const stopped = cancelledRawId(message);
      if (stopped !== undefined) this.#inflight.get(stopped)?.stop();
      return sent;
    }
    return this.#post(message);
  }

  override async close(): Promise<void> {
    for (const post of this.#inflight.values()) post.request.destroy();
    this.#inflight.clear();
    return super.close();
  }

  /**
   * POSTs one fast-path request; resolves once its answer was handed on (or the upstream accepted it with
   * 202 and no answer, as the SDK's transport resolves), rejects as the SDK's transport would.
   */
  #post(message: JSONRPCMessage): Promise<void> {
    const headers: Record<string, string> = { ...this.#headers };
    const session = this.sessionId;
    if (session) headers['mcp-session-id'] = session;
    const version = this.protocolVersion;
    if (version) headers['mcp-protocol-version'] = version;
    const body = Buffer.from(JSON.stringify(message));
    headers['content-length'] = String(body.byteLength);
    const url = this.#url;
    const id = (message as { id: string }).id;
    return new Promise<void>((resolve, reject) => {
      const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        headers,
        agent: agents[url.protocol as 'http:' | 'https:'],
      });
      const post = new RawPost(this, request, id, resolve, reject);
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
  ended(id: string, post: RawPost): void {
    if (this.#inflight.get(id) === post) this.#inflight.delete(id);
  }

  /** @internal A message of an answer, handed on as the SDK's transport hands it. */
  deliver(data: string): JSONRPCMessage | undefined {
    let message: JSONRPCMessage;
    try {
      const parsed: unknown = JSON.parse(data);
      message = rawAnswer(parsed) ? parsed : deserializeMessage(data);
    } catch (error) {
      // As the SDK's transport: a message it cannot read is an error of the transport, the stream goes on.
      this.onerror?.(error as Error);
      return undefined;
    }
    this.onmessage?.(message);
    return message;
  }

  /** @internal A resumable stream closed before its answer: resumed as the SDK's transport resumes it. */
  resume(lastId: string, retry: number | undefined): Promise<void> {
    return new Promise<void>((resume) => setTimeout(resume, retry ?? FIRST_RECONNECTION_MS)).then(() =>
      this.resumeStream(lastId),
    );
  }
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
  readonly #id: string;
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
    id: string,
    resolve: () => void,
    reject: (error: Error) => void,
  ) {
    this.#transport = transport;
    this.request = request;
    this.#id = id;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** The gateway stopped the request: the POST is closed, nothing more is handed on or reported. */
  stop(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#transport.ended(this.#id, this);
    this.request.destroy();
    this.#res?.destroy();
    this.#resolve();
  }

  /** Fails the request (once: a connection reset mid-answer fails both the request and the answer's read). */
  failed(error: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#transport.ended(this.#id, this);
    this.#transport.onerror?.(error);
    this.#reject(error);
  }

  #done(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#transport.ended(this.#id, this);
    this.#resolve();
  }

  /** Reads the answer, handing each message on; fails when it holds no answer to the request. */
  read(res: IncomingMessage): void {
    if (this.#settled) return void res.destroy();
    this.#res = res;
    const status = res.statusCode ?? 500;
    if (status < 200 || status > 299) {
      readText(res).then((text) => {
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
      res.resume();
      return this.#done();
    }
    // As the SDK's transport reads it: the web Headers join several (Node keeps the first), then the media type.
    const contentType = contentTypeOf(res);
    const essence = essenceOf(contentType);
    if (essence === 'text/event-stream') this.#events = new SseEvents(this.#each);
    else if (essence === 'application/json') this.#json = true;
    else {
      res.resume();
      return this.failed(
        new SdkError(SdkErrorCode.ClientHttpUnexpectedContent, `Unexpected content type: ${contentType}`, {
          contentType,
        }),
      );
    }
    res.on('data', this.#data);
    res.once('end', this.#end);
    res.once('error', this.#fail);
    // A connection closed before the whole answer came is an error, not a short answer.
    res.once('close', this.#closed);
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
    const message = this.#transport.deliver(data) as { id?: unknown; method?: unknown } | undefined;
    if (message !== undefined && message.id === this.#id && message.method === undefined) this.#answered = true;
  };

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
      for (const one of Array.isArray(data) ? data : [data]) this.#each(JSON.stringify(one));
    }
    if (this.#answered) return this.#done();
    // A resumable stream (its events carry ids: the upstream keeps an event store, SEP-1699) closed before
    // the answer: the SDK's transport resumes it, after the upstream's `retry` or its own first delay, with
    // a GET naming the last event id; the answer comes through onmessage as on the SDK path.
    const lastId = this.#events?.lastId;
    if (lastId !== undefined) {
      this.#transport.resume(lastId, this.#events?.retry).then(() => this.#done(), this.#fail);
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

/** The last Content-Type read and its essence (an upstream answers with the same one every time). */
let lastType: string | undefined;
let lastEssence: string | undefined;

/** `mediaTypeEssence` (a pure function of the header), remembered for the last header read. */
function essenceOf(contentType: string | undefined): string | undefined {
  if (contentType !== lastType || contentType === undefined) {
    lastEssence = mediaTypeEssence(contentType);
    lastType = contentType;
  }
  return lastEssence;
}

/** An answer's Content-Type as the web Headers give it: several joined (Node's `headers` keeps the first). */
function contentTypeOf(res: IncomingMessage): string | undefined {
  const raw = res.rawHeaders;
  let found: string | undefined;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.length === 12 && raw[i]!.toLowerCase() === 'content-type')
      found = found === undefined ? raw[i + 1]! : `${found}, ${raw[i + 1]!}`;
  return found;
}

/** UTF-8 text, a BOM dropped, as the web Response's text() and json() read it (the SDK transport's reads). */
function textOf(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
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
 * The events of an SSE stream as the SDK's `EventSourceParserStream` reads them (the WHATWG rules: lines end
 * in CRLF, LF or CR; `data:` lines joined by newlines; one optional space after the colon; comments and
 * `id`/`retry` skipped): each `message` event's data (an event of another name, or without data, is
 * skipped, as the SDK's transport skips it); an event the stream ends in the middle of is dropped. The last
 * event id and `retry` are kept (a stream closed before its answer is resumed from there).
 */
class SseEvents {
  readonly #each: (data: string) => void;
  readonly #decoder = new StringDecoder('utf8');
  #text = '';
  #data: string[] = [];
  #dataSize = 0;
  #event = '';
  #id: string | undefined;
  #begun = false;
  /** The id of the last event that named one (a resumable stream). */
  lastId: string | undefined;
  /** The reconnection delay the stream asked for (`retry:`), ms. */
  retry: number | undefined;

  constructor(each: (data: string) => void) {
    this.#each = each;
  }

  /** What is held now (the unfinished line and the data of the unfinished event), in characters. */
  get held(): number {
    return this.#text.length + this.#dataSize;
  }

  push(chunk: Buffer): void {
    // The held text has no line end in it (but perhaps a last CR): the search starts where it ended.
    const from = Math.max(0, this.#text.length - 1);
    let text = this.#text + this.#decoder.write(chunk);
    // A BOM opening the stream is dropped, as the SDK's TextDecoderStream drops it.
    if (!this.#begun && text !== '') {
      this.#begun = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    for (;;) {
      let end = start === 0 ? Math.min(from, text.length) : start;
      while (end < text.length && text.charCodeAt(end) !== 10 && text.charCodeAt(end) !== 13) end++;
      if (end === text.length) break;
      // A CR last in the chunk may be the first half of a CRLF: wait for the next one.
      if (text.charCodeAt(end) === 13 && end + 1 === text.length) break;
      this.#line(text.slice(start, end));
      start = end + (text.charCodeAt(end) === 13 && text.charCodeAt(end + 1) === 10 ? 2 : 1);
    }
    this.#text = text.slice(start);
  }

  #line(line: string): void {
    if (line === '') {
      const data = this.#data;
      const event = this.#event;
      if (this.#id) this.lastId = this.#id;
      this.#data = [];
      this.#dataSize = 0;
      this.#event = '';
      this.#id = undefined;
      if (data.length > 0 && (event === '' || event === 'message')) {
        const joined = data.join('\n');
        if (joined !== '') this.#each(joined);
      }
      return;
    }
    if (line.charCodeAt(0) === 58) return; // a comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') {
      this.#data.push(value);
      this.#dataSize += value.length + 1;
    } else if (field === 'event') this.#event = value;
    else if (field === 'id' && !value.includes('\0'))
      this.#id = value; // as eventsource-parser: NUL, ignored
    else if (field === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
  }
}
