/**
 * The HTTP wire of the gateway's listener: bounded JSON bodies, a Node request as a web Request, a
 * 2026-07-28 request served through the modern handler, and the probes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { classifyInboundRequest, type McpHttpHandler } from '@modelcontextprotocol/server';
import { parseJsonText } from '../json-text.js';
import { reply } from './auth.js';
import { writeResponse } from './http-session.js';

/** The largest MCP request body read (the SDK's own bound). */
export const MAX_MCP_BODY = 4 * 1024 * 1024;

/** The versions the 2025-era sessions serve, named when a 2026-07-28 request cannot be served. */
export const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

/** What {@link readJson} gives: the parsed body, or the refusal to answer. */
export type ReadJson =
  | { readonly ok: true; readonly body: unknown }
  | { readonly ok: false; readonly status: number; readonly error: { code: number; message: string } };

/**
 * Reads a POST body as JSON (the era is decided from it), bounded; a body that is not JSON is a parse error.
 * Read with the request's own events, not an async iterator (issue 25: the iterator and its end-of-stream
 * watcher cost more per request than the read): a body over {@link MAX_MCP_BODY} stops the read (Node
 * discards the rest once the 413 is sent); a request that fails or closes early (the client went away) rejects.
 */
export function readJson(req: IncomingMessage): Promise<ReadJson> {
  return Promise.resolve(req).then(readBuffered);
}

/**
 * The body as {@link readJson} reads it: taken at once when the whole request was already parsed and is held by
 * the request (a body that came with its head: by the time the parser's turn is over, the usual case), read as
 * it comes by the request's events otherwise (issue 25.3: four listeners on and off, the stream's flowing and its
 * end a tick later, per request).
 */
function readBuffered(req: IncomingMessage): ReadJson | Promise<ReadJson> {
  const length = req.readableLength;
  if (
    (req.complete || (length === declaredLength(req) && length !== 0)) &&
    !req.readableFlowing &&
    length <= MAX_MCP_BODY &&
    req.listenerCount('data') === 0
  ) {
    const bytes = req.read() as Buffer | null;
    if (req.readableLength === 0) return parsedBody(bytes ?? Buffer.alloc(0));
    return readEvents(req, bytes);
  }
  return readEvents(req, null);
}

/**
 * The body's length as its `Content-Length` declares it (Node's parser took it: one value, digits), or -1 when
 * another framing (chunked) or none gives it. All of it held is the whole body: on Node 20 the parser hands the
 * body on before it marks the request complete (the same parse of the same bytes, a step later).
 */
function declaredLength(req: IncomingMessage): number {
  const declared = req.headers['content-length'];
  return declared === undefined || req.headers['transfer-encoding'] !== undefined ? -1 : Number(declared);
}

/** The body's bytes as JSON, or the parse error to answer. */
function parsedBody(bytes: Buffer): ReadJson {
  try {
    return { ok: true, body: parseJsonText(bytes.toString('utf8')) };
  } catch {
    return { ok: false, status: 400, error: { code: -32700, message: 'Parse error: the request body is not JSON' } };
  }
}

/** The body read by the request's events (`first` its bytes read already, if any). */
function readEvents(req: IncomingMessage, first: Buffer | null): Promise<ReadJson> {
  return new Promise<ReadJson>((resolve, reject) => {
    let chunks: Buffer[] | undefined;
    let size = first?.length ?? 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > MAX_MCP_BODY) {
        stop();
        // The rest is not kept: Node discards it once the answer (413) is sent.
        return resolve({
          ok: false,
          status: 413,
          error: { code: -32600, message: `the request body is over ${MAX_MCP_BODY} bytes` },
        });
      }
      if (first === null) first = chunk;
      else (chunks ??= [first]).push(chunk);
    };
    const onEnd = (): void => {
      stop();
      resolve(parsedBody(chunks ? Buffer.concat(chunks) : (first ?? Buffer.alloc(0))));
    };
    const onError = (error: Error): void => {
      stop();
      reject(error);
    };
    // The request closed before its end (and without an error): as the async iterator, a premature close.
    const onClose = (): void => {
      stop();
      reject(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    const stop = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * Whether a POST with this parsed body is 2025-era traffic (sessions) rather than a 2026-07-28 request:
 * the SDK's own classification (`isLegacyRequest` runs exactly this on a parsed body), read from the Node
 * request's headers without building a web Request for it (issue 25: that cost more than the answer).
 */
export function isLegacyPost(req: IncomingMessage, body: unknown): boolean {
  const header = (name: string): string | undefined => {
    const value = req.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  const version = header('mcp-protocol-version');
  const method = header('mcp-method');
  const name = header('mcp-name');
  return (
    classifyInboundRequest({
      httpMethod: req.method ?? 'POST',
      ...(version !== undefined ? { protocolVersionHeader: version } : {}),
      ...(method !== undefined ? { mcpMethodHeader: method } : {}),
      ...(name !== undefined ? { mcpNameHeader: name } : {}),
      body,
    }).kind === 'legacy'
  );
}

/** The headers of a Node request as a web Request (the body travels as parsed JSON beside it). */
export function webRequest(req: IncomingMessage, init: { body?: string; signal?: AbortSignal } = {}): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`), {
    method: req.method ?? 'POST',
    headers,
    ...init,
  });
}

/**
 * Serves one 2026-07-28 request through the modern handler and writes its answer (one JSON body, or an
 * SSE stream, as http-session.ts writes them). The client closing the connection is the request's cancellation (the revision's rule on
 * HTTP): the handler's signal aborts, and so does the upstream call.
 */
export async function serveModern(
  handler: McpHttpHandler,
  req: IncomingMessage,
  res: ServerResponse,
  parsedBody: unknown,
  auth: AuthInfo | undefined,
): Promise<void> {
  const cancelled = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) cancelled.abort();
  });
  const response = await handler.fetch(
    webRequest(req, { body: JSON.stringify(parsedBody), signal: cancelled.signal }),
    {
      parsedBody,
      ...(auth ? { authInfo: auth as never } : {}),
    },
  );
  await writeResponse(response, res, true);
}

/** Whether a probe names the listener by IP address (`Host: 10.0.0.7:8080`), with no Origin or forwarded host. */
export function probedByAddress(req: IncomingMessage): boolean {
  const host = req.headers.host;
  if (typeof host !== 'string' || req.headers.origin !== undefined || req.headers['x-forwarded-host'] !== undefined)
    return false;
  let hostname: string;
  try {
    const url = new URL(`http://${host.trim()}`);
    if (url.pathname !== '/' || url.username || url.search) return false;
    hostname = url.hostname;
  } catch {
    return false;
  }
  return isIP(hostname.replace(/^\[(.*)\]$/, '$1')) !== 0;
}

/**
 * `GET /healthz` (the process answers) and `GET /readyz` (what the readiness check reports, and draining):
 * unauthenticated, states only, never cached.
 */
export async function answerProbe(
  req: IncomingMessage,
  res: ServerResponse,
  pathname: string,
  readiness: Readiness | undefined,
  draining: boolean,
): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 405, { error: 'method_not_allowed' });
  res.setHeader('cache-control', 'no-store');
  if (pathname === '/healthz') return reply(res, 200, { status: 'ok' });
  const checks: Record<string, string> = {};
  let ready = true;
  try {
    const seen = readiness ? await readiness() : { ready: true, checks: {} };
    Object.assign(checks, seen.checks);
    ready = seen.ready;
  } catch (error) {
    ready = false;
    checks['readiness'] = `could not be checked: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (draining) {
    ready = false;
    checks['gateway'] = 'draining: new calls are refused';
  }
  const notReady = Object.entries(checks)
    .filter(([, state]) => state !== 'ok')
    .map(([name, state]) => `${name}: ${state}`);
  return reply(res, ready ? 200 : 503, {
    status: ready ? 'ready' : 'not ready',
    checks,
    ...(ready ? {} : { notReady }),
  });
}

/** The readiness check behind `GET /readyz`: ready or not, and each check's state ('ok' or why not). */
export type Readiness = () => Promise<{ readonly ready: boolean; readonly checks: Readonly<Record<string, string>> }>;

/** `GET /.well-known/oauth-protected-resource` (RFC 9728); `scopes` read now (the policy in force's scope map). */
export function answerMetadata(
  req: IncomingMessage,
  res: ServerResponse,
  meta: {
    readonly resource: string;
    readonly authorizationServers: readonly string[];
    readonly scopes: readonly string[] | (() => readonly string[]) | undefined;
  },
): void {
  if (req.method !== 'GET') return reply(res, 405, { error: 'method_not_allowed' });
  const scopes = typeof meta.scopes === 'function' ? meta.scopes() : meta.scopes;
  res.setHeader('cache-control', 'max-age=300');
  reply(res, 200, {
    resource: meta.resource,
    authorization_servers: [...meta.authorizationServers],
    ...(scopes ? { scopes_supported: [...scopes] } : {}),
    bearer_methods_supported: ['header'],
    resource_name: 'toolgate MCP gateway',
  });
}

/** Draining: once asked, no new call is taken, and `drain()` resolves when the calls in flight have ended. */
export class Drain {
  #draining = false;
  #inflight = 0;
  readonly #idle = new Set<() => void>();

  get draining(): boolean {
    return this.#draining;
  }

  get inflight(): number {
    return this.#inflight;
  }

  /**
   * A call started: it is in flight until its response closes. One listener for every response (a response
   * closes once): no closure and no `once` wrapper per request (issue 25).
   */
  started(res: ServerResponse): void {
    this.#inflight++;
    res.on('close', this.#ended);
  }

  readonly #ended = (): void => {
    this.#inflight--;
    if (this.#inflight === 0) for (const wake of this.#idle) wake();
  };

  async drain(): Promise<void> {
    this.#draining = true;
    if (this.#inflight === 0) return;
    await new Promise<void>((resolve) => {
      const wake = (): void => {
        this.#idle.delete(wake);
        resolve();
      };
      this.#idle.add(wake);
    });
  }
}

/** `GET /metrics`: the body and content type the metrics source gives (Prometheus text), never cached. */
export async function answerMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  metrics: () => Promise<{ readonly contentType: string; readonly body: string }>,
): Promise<void> {
  if (req.method !== 'GET') return reply(res, 405, { error: 'method_not_allowed' });
  const { contentType, body } = await metrics();
  res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(body);
}

/** A request handler as a Node listener: a throw is a 500 naming the error (or the end of a started answer). */
export function listenerOf(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        reply(res, 500, {
          error: 'internal_error',
          error_description: error instanceof Error ? error.message : String(error),
        });
      else res.end();
    });
  };
}
