/**
 * The gateway's own keep-alive HTTP/1.1 client for its raw POSTs to a plain `http:` upstream (issue 25.3;
 * upstream-raw-http.ts): node:http's client costs ~94 µs of CPU a POST, one `net.Socket` a connection ~35–58.
 * One request at a time on a connection, a LIFO pool of idle ones (closed after 4 s idle, or a second before
 * the server's `Keep-Alive: timeout=N`, as node:http's agent closes them; unref'd, as the agent's are), the
 * request written as node:http writes it (the given headers in their order, then `Host`, `Authorization` of the
 * URL's user info, `Connection: keep-alive`), the answer read by http-own-reader.ts's strict reader. Nothing is
 * ever sent twice: a connection that errors or closes before the whole answer fails the call (its outcome is
 * unknown: the tool may have run). `https:` stays on node:http.
 */
import { validateHeaderName, validateHeaderValue, type RequestOptions } from 'node:http';
import { connect, type Socket } from 'node:net';
import { ResponseReader, type ResponseSink } from './http-own-reader.js';

/** An idle connection is closed after this long (node:http's agent as the gateway configures it). */
const IDLE_MS = 4_000;
/** The most idle connections kept (node:http's agent's `maxFreeSockets`). */
const MAX_IDLE = 256;

/** What reads an answer's body: its bytes as they come, its end, or the error that ends it. */
export interface BodySink {
  data(chunk: Buffer): void;
  end(): void;
  error(error: Error): void;
}

/** An answer's head, and its body read once by a sink, as the raw POST reads it whichever client carried it. */
export interface RawResponse {
  readonly statusCode: number;
  readonly statusMessage: string;
  readonly rawHeaders: readonly string[];
  /** Whether the whole answer (its body's framing too: a chunked body's last chunk and trailers) has been read. */
  readonly complete: boolean;
  /** Reads the body (called in the head's handler, before it returns): a connection closed mid-answer is an error. */
  read(sink: BodySink): void;
  /** Reads no more of it; its connection is closed, not kept. */
  destroy(): void;
}

/** What a request reports: its answer's head, or the error that failed it before one came. */
export interface RawHandler {
  response(res: RawResponse): void;
  error(error: Error): void;
}

/** One request in flight: destroyed, its connection is closed (nothing more is read of it). */
export interface RawExchange {
  destroy(error?: Error): void;
}

/** The request headers node:http frames itself, or that would change the framing: such a request stays on it. */
export const FRAMING_HEADERS = new Set([
  'connection',
  'expect',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** The parts of a request's head that are the same on every request of a transport ({@link OwnHttpClient.fixedHead}). */
export interface FixedHead {
  readonly start: string;
  readonly end: string;
}

/** The pool of one upstream's connections (host and port of its URL) and the requests sent on them. */
export class OwnHttpClient {
  readonly #host: string;
  readonly #port: number;
  readonly #line: string;
  /** What node:http appends: Host (unless given), Authorization of the user info (unless given), Connection. */
  readonly #hostHeader: string;
  readonly #basic: string | undefined;
  readonly #silentMs: number;
  readonly #idle: Conn[] = [];
  #closed = false;

  /** `target`: what upstream-raw-http.ts's `requestTarget` makes of the URL (urlToHttpOptions's fields). */
  constructor(target: RequestOptions, silentMs: number) {
    this.#host = target.hostname ?? 'localhost';
    this.#port = target.port === undefined || target.port === null || target.port === '' ? 80 : Number(target.port);
    this.#line = `POST ${target.path ?? '/'} HTTP/1.1\r\n`;
    let host = this.#host;
    const colon = host.indexOf(':');
    if (colon !== -1 && host.includes(':', colon + 1) && host.charCodeAt(0) !== 91) host = `[${host}]`;
    if (this.#port !== 80) host += `:${this.#port}`;
    this.#hostHeader = host;
    this.#basic =
      target.auth === undefined || target.auth === null
        ? undefined
        : `Basic ${Buffer.from(target.auth).toString('base64')}`;
    this.#silentMs = silentMs;
  }

  /**
   * One POST's bytes (`headers` lower-cased, none of {@link FRAMING_HEADERS}; a name or value node:http would
   * refuse throws as it throws), written as node:http writes them.
   */
  request(headers: Readonly<Record<string, string>>, body: Buffer): Buffer {
    const { start, end } = this.fixedHead(headers);
    const head = start + end;
    // Every name and value node:http lets through is Latin-1: the head's byte length is its length.
    const bytes = Buffer.allocUnsafe(head.length + body.length);
    const at = bytes.write(head, 0, 'latin1');
    body.copy(bytes, at);
    return bytes;
  }

  /**
   * The head every request with `headers` first begins with (the request line and those headers) and ends with
   * (Host, Authorization, Connection, the blank line), as {@link request} writes them around headers added after
   * `headers`, none named `host` or `authorization`: validated once (a name or value node:http would refuse
   * throws here, as {@link request} throws).
   */
  fixedHead(headers: Readonly<Record<string, string>>): FixedHead {
    let start = this.#line;
    for (const name in headers) {
      const value = headers[name]!;
      validateHeaderName(name);
      validateHeaderValue(name, value);
      start += `${name}: ${value}\r\n`;
    }
    let end = '';
    if (headers['host'] === undefined) end += `Host: ${this.#hostHeader}\r\n`;
    if (this.#basic !== undefined && headers['authorization'] === undefined) end += `Authorization: ${this.#basic}\r\n`;
    end += 'Connection: keep-alive\r\n\r\n';
    return { start, end };
  }

  /**
   * {@link request}'s bytes for the headers of `fixed` then `added` (lines `name: value\r\n` already checked as
   * node:http checks them, no `host` or `authorization`), and `body` as UTF-8 (`length` its byte length):
   * the body copied once, into the request's own buffer.
   */
  requestWith(fixed: FixedHead, added: string, body: string, length: number): Buffer {
    const head = fixed.start + added + fixed.end;
    const bytes = Buffer.allocUnsafe(head.length + length);
    const at = bytes.write(head, 0, 'latin1');
    bytes.write(body, at, length, 'utf8');
    return bytes;
  }

  /** Sends a request's bytes ({@link request}) on an idle connection or a new one. */
  send(bytes: Buffer, handler: RawHandler): RawExchange {
    let conn = this.#idle.pop();
    // A connection closed and not yet told (its close event to come) is not taken.
    while (conn !== undefined && (conn.socket.destroyed || !conn.socket.writable)) conn = this.#idle.pop();
    conn ??= new Conn(this, connect({ host: this.#host, port: this.#port }));
    return conn.send(bytes, handler, this.#silentMs);
  }

  /** Idle connections closed; a request in flight is its transport's to stop. */
  close(): void {
    this.#closed = true;
    for (const conn of this.#idle.splice(0)) conn.socket.destroy();
  }

  /** @internal A connection's answer ended: kept idle (for `ms`), or closed. */
  release(conn: Conn, ms: number): void {
    if (this.#closed || this.#idle.length >= MAX_IDLE || ms <= 0) return void conn.socket.destroy();
    conn.socket.setTimeout(ms);
    conn.socket.unref();
    this.#idle.push(conn);
  }

  /** @internal A connection closed: no longer idle. */
  gone(conn: Conn): void {
    const at = this.#idle.indexOf(conn);
    if (at !== -1) this.#idle.splice(at, 1);
  }
}

/** One connection: its socket's events, once, for whichever request it carries now. */
class Conn {
  readonly socket: Socket;
  readonly #client: OwnHttpClient;
  #exchange: Exchange | undefined;
  #used = false;

  constructor(client: OwnHttpClient, socket: Socket) {
    this.#client = client;
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1_000);
    socket.on('data', this.#data);
    socket.on('end', this.#end);
    socket.on('error', this.#error);
    socket.on('close', this.#close);
    socket.on('timeout', this.#timeout);
  }

  send(bytes: Buffer, handler: RawHandler, silentMs: number): Exchange {
    const exchange = new Exchange(this, handler);
    this.#exchange = exchange;
    if (this.#used) this.socket.ref();
    this.#used = true;
    this.socket.setTimeout(silentMs);
    this.socket.write(bytes);
    return exchange;
  }

  /** @internal The exchange no longer reads (destroyed, failed): the connection is closed. */
  drop(exchange: Exchange): void {
    if (this.#exchange !== exchange) return;
    this.#exchange = undefined;
    this.socket.destroy();
  }

  readonly #data = (chunk: Buffer): void => {
    const exchange = this.#exchange;
    // Bytes nobody asked for (on an idle connection): it is not reused.
    if (exchange === undefined) return this.#drop();
    const reader = exchange.reader;
    reader.push(chunk);
    if (!reader.done || this.#exchange !== exchange) return;
    this.#exchange = undefined;
    exchange.detach();
    if (!reader.keepAlive || reader.extra) return void this.socket.destroy();
    this.#client.release(this, keepFor(exchange.rawHeaders));
  };

  /** An idle connection closed: out of the pool now, not when its close event comes. */
  #drop(): void {
    this.#client.gone(this);
    this.socket.destroy();
  }

  readonly #end = (): void => {
    const exchange = this.#exchange;
    this.#client.gone(this);
    if (exchange === undefined) return;
    this.#exchange = undefined;
    exchange.detach();
    exchange.reader.eof();
    this.socket.destroy();
  };

  readonly #error = (error: Error): void => {
    this.#client.gone(this);
    this.#exchange?.failed(error);
  };

  readonly #close = (): void => {
    this.#client.gone(this);
    this.#exchange?.failed(new Error('the upstream closed the connection mid-answer'));
  };

  readonly #timeout = (): void => {
    const exchange = this.#exchange;
    if (exchange === undefined) return this.#drop();
    exchange.failed(new Error(`the upstream sent nothing for ${this.socket.timeout! / 1000} s`));
  };
}

/** node:http's agent's idle time for a connection after this answer (a server's `Keep-Alive: timeout=N` hint). */
function keepFor(raw: readonly string[]): number {
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length !== 10 || raw[i]!.toLowerCase() !== 'keep-alive') continue;
    const hint = /^timeout=(\d+)/.exec(raw[i + 1]!)?.[1];
    if (hint === undefined) return IDLE_MS;
    const ms = Number.parseInt(hint, 10) * 1000 - 1000;
    return ms < IDLE_MS ? ms : IDLE_MS;
  }
  return IDLE_MS;
}

/** One request and its answer, read by the connection's reader and handed to its handler and sink. */
class Exchange implements RawExchange, RawResponse, ResponseSink {
  readonly reader: ResponseReader = new ResponseReader(this);
  statusCode = 0;
  statusMessage = '';
  rawHeaders: readonly string[] = [];
  #conn: Conn | undefined;
  readonly #handler: RawHandler;
  #sink: BodySink | undefined;
  #headed = false;
  #over = false;

  constructor(conn: Conn, handler: RawHandler) {
    this.#conn = conn;
    this.#handler = handler;
  }

  get complete(): boolean {
    return this.reader.done;
  }

  /** @internal The connection no longer carries it (its answer ended: the connection kept or closed). */
  detach(): void {
    this.#conn = undefined;
  }

  head(status: number, reason: string, rawHeaders: string[]): void {
    this.statusCode = status;
    this.statusMessage = reason;
    this.rawHeaders = rawHeaders;
    this.#headed = true;
    this.#handler.response(this);
  }

  body(chunk: Buffer): void {
    if (!this.#over) this.#sink?.data(chunk);
  }

  end(): void {
    if (this.#over) return;
    this.#over = true;
    this.#sink?.end();
  }

  /** The reader found the answer not well-formed, or the connection closed or failed before its end. */
  fail(error: Error): void {
    this.failed(error);
  }

  read(sink: BodySink): void {
    this.#sink = sink;
  }

  destroy(): void {
    this.#over = true;
    this.#close();
  }

  /** @internal Fails the request (before its head) or its answer's read (after), once; its connection closed. */
  failed(error: Error): void {
    if (this.#over) return;
    this.#over = true;
    this.#close();
    if (this.#headed) this.#sink?.error(error);
    else this.#handler.error(error);
  }

  #close(): void {
    this.reader.stop();
    const conn = this.#conn;
    this.#conn = undefined;
    conn?.drop(this);
  }
}
