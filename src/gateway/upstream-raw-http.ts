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
  readonly #inflight = new Set<ClientRequest>();

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
    if (!isRawRequest(message)) return super.send(message, options);
    return this.#post(message);
  }

  override async close(): Promise<void> {
    for (const request of this.#inflight) request.destroy();
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
      let settled = false;
      const failed = (error: Error): void => {
        // Once: a connection reset mid-answer fails both the request and the answer's read.
        if (settled) return;
        settled = true;
        this.#inflight.delete(request);
        this.onerror?.(error);
        reject(error);
      };
      const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        headers,
        agent: agents[url.protocol as 'http:' | 'https:'],
      });
      this.#inflight.add(request);
      request.setNoDelay(true);
      request.setTimeout(SILENT_MS, () =>
        request.destroy(new Error(`the upstream sent nothing for ${SILENT_MS / 1000} s`)),
      );
      request.once('error', failed);
      request.once('response', (res) => {
        this.#answer(res, id).then(() => {
          if (settled) return;
          settled = true;
          this.#inflight.delete(request);
          resolve();
        }, failed);
      });
      request.end(body);
    });
  }

  /** Reads the answer of request `id`, handing each message on; rejects when it holds no answer to `id`. */
  async #answer(res: IncomingMessage, id: string): Promise<void> {
    const status = res.statusCode ?? 500;
    if (status < 200 || status > 299) {
      const text = await readText(res);
      throw new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${text}`, {
        status,
        statusText: res.statusMessage ?? '',
        text,
      });
    }
    if (status === 202) {
      res.resume();
      return;
    }
    // As the SDK's transport reads it: the web Headers join several (Node keeps the first), then the media type.
    const contentType = res.headersDistinct['content-type']?.join(', ');
    const essence = mediaTypeEssence(contentType);
    let answered = false;
    const deliver = (data: string): void => {
      let message: JSONRPCMessage;
      try {
        const parsed: unknown = JSON.parse(data);
        message = rawAnswer(parsed) ? parsed : deserializeMessage(data);
      } catch (error) {
        // As the SDK's transport: a message it cannot read is an error of the transport, the stream goes on.
        this.onerror?.(error as Error);
        return;
      }
      const m = message as { id?: unknown; method?: unknown };
      if (m.id === id && m.method === undefined) answered = true;
      this.onmessage?.(message);
    };
    let events: SseEvents | undefined;
    if (essence === 'text/event-stream') {
      events = new SseEvents(deliver);
      for await (const chunk of res) events.push(chunk as Buffer);
    } else if (essence === 'application/json') {
      const data: unknown = JSON.parse(await readText(res));
      for (const one of Array.isArray(data) ? data : [data]) deliver(JSON.stringify(one));
    } else {
      res.resume();
      throw new SdkError(SdkErrorCode.ClientHttpUnexpectedContent, `Unexpected content type: ${contentType}`, {
        contentType,
      });
    }
    if (answered) return;
    // A resumable stream (its events carry ids: the upstream keeps an event store, SEP-1699) closed before
    // the answer: the SDK's transport resumes it, after the upstream's `retry` or its own first delay, with
    // a GET naming the last event id; the answer comes through onmessage as on the SDK path.
    const lastId = events?.lastId;
    if (lastId !== undefined) {
      await new Promise((resume) => setTimeout(resume, events?.retry ?? FIRST_RECONNECTION_MS));
      return this.resumeStream(lastId);
    }
    throw new SdkError(
      SdkErrorCode.ConnectionClosed,
      'the upstream ended its answer stream without answering the call: its outcome is unknown',
    );
  }
}

async function readText(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  // A BOM is dropped, as the web Response's text() and json() drop it (the SDK transport's reads).
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
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

  push(chunk: Buffer): void {
    let text = this.#text + this.#decoder.write(chunk);
    // A BOM opening the stream is dropped, as the SDK's TextDecoderStream drops it.
    if (!this.#begun && text !== '') {
      this.#begun = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    for (;;) {
      let end = start;
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
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
    else if (field === 'id' && !value.includes('\0'))
      this.#id = value; // as eventsource-parser: NUL, ignored
    else if (field === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
  }
}
