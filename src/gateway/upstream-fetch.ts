/**
 * The gateway's HTTP client to a Streamable HTTP upstream: the SDK's client transport with a `fetch` made
 * on node:http(s) and one keep-alive agent per scheme (issue 25.3). The global fetch (undici) costs the
 * gateway more per request than the gateway's own work does — a web Request per call, the fetch
 * algorithm's steps, the llhttp parser in WebAssembly; here a request is one `http.request` on a pooled
 * connection, its answer a web Response whose body streams the socket's chunks as they come.
 *
 * A connection carries no MCP state (the session is the `mcp-session-id` header of each request), so
 * reusing one across upstreams, sessions or tenants mixes nothing. Only what the SDK's transport sends is
 * taken here (`redirect: 'manual'`, the SDK following same-origin redirects itself; a text body); anything
 * else — an OAuth flow's own requests, another body — goes to the global fetch, as before.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { describe } from '../names.js';

// An idle pooled connection is closed after 4 s, or 1 s before the server's `Keep-Alive: timeout=N` says it
// closes its side (undici's defaults), so a request is not sent on a connection the server is closing.
const pooled = { keepAlive: true, scheduling: 'lifo', timeout: 4_000 } as const;
export const agents = { 'http:': new HttpAgent(pooled), 'https:': new HttpsAgent(pooled) } as const;

/** A request (its answer included) that receives nothing for this long fails, as undici's body and headers timeouts. */
export const SILENT_MS = 300_000;

/** Statuses whose Response has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** A new Streamable HTTP transport to `url` whose requests go through {@link upstreamFetch}. */
export function httpUpstreamTransport(url: string | URL, headers?: Readonly<Record<string, string>>): Transport {
  return new StreamableHTTPClientTransport(upstreamUrl(url), {
    fetch: upstreamFetch,
    ...(headers ? { requestInit: { headers: { ...headers } } } : {}),
  });
}

/** An upstream's `url` option as a URL (a TypeError naming it otherwise). */
export function upstreamUrl(url: string | URL): URL {
  try {
    return url instanceof URL ? url : new URL(String(url));
  } catch {
    throw new TypeError(`option "url" must be an absolute URL, got ${describe(url)}`);
  }
}

/**
 * `fetch` on node:http(s) with keep-alive, for the SDK's client transport: what it sends (text bodies,
 * `redirect: 'manual'`, the SDK following same-origin redirects itself); anything else goes to the global fetch.
 */
export function upstreamFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : null;
  const body = init.body;
  if (
    url === null ||
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array)) ||
    init.redirect !== 'manual'
  )
    return fetch(input, init);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  const headers: Record<string, string> = {};
  if (init.headers !== undefined) new Headers(init.headers).forEach((value, name) => (headers[name] = value));
  const bytes = typeof body === 'string' ? Buffer.from(body) : (body ?? undefined);
  if (bytes !== undefined) headers['content-length'] = String(bytes.byteLength);
  const https = url.protocol === 'https:';
  return new Promise<Response>((resolve, reject) => {
    const request = (https ? httpsRequest : httpRequest)(url, {
      method: init.method ?? 'GET',
      headers,
      agent: agents[url.protocol as 'http:' | 'https:'],
    });
    request.setNoDelay(true);
    request.setTimeout(SILENT_MS, () =>
      request.destroy(new Error(`the upstream sent nothing for ${SILENT_MS / 1000} s`)),
    );
    const onAbort = (): void => {
      request.destroy(abortReason(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    request.once('error', (error) => {
      signal?.removeEventListener('abort', onAbort);
      reject(error);
    });
    request.once('response', (res) => {
      try {
        resolve(asResponse(res, () => signal?.removeEventListener('abort', onAbort)));
      } catch (error) {
        res.destroy();
        reject(error);
      }
    });
    request.end(bytes);
  });
}

/** The answer as a web Response: its headers, and a body that streams the socket's chunks (paused when unread). */
function asResponse(res: IncomingMessage, done: () => void): Response {
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  const status = res.statusCode ?? 500;
  const init = { status, statusText: res.statusMessage ?? '', headers };
  if (NULL_BODY.has(status)) {
    res.resume();
    res.once('end', done);
    return new Response(null, init);
  }
  let open = true;
  const finish = (end: (controller: ReadableStreamDefaultController<Uint8Array>) => void) => {
    return (controller: ReadableStreamDefaultController<Uint8Array>): void => {
      if (!open) return;
      open = false;
      done();
      end(controller);
    };
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      res.on('data', (chunk: Buffer) => {
        if (!open) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 1) <= 0) res.pause();
      });
      const close = finish((c) => c.close());
      // A connection closed before the whole answer came is an error, not a short body.
      const fail = (error: unknown) =>
        finish((c) =>
          c.error(error instanceof Error ? error : new Error('the upstream closed the connection mid-answer')),
        );
      res.once('end', () => close(controller));
      res.once('error', (error) => fail(error)(controller));
      res.once('close', () => {
        if (!res.complete) fail(undefined)(controller);
      });
    },
    pull() {
      res.resume();
    },
    cancel() {
      if (open) {
        open = false;
        done();
      }
      res.destroy();
    },
  });
  return new Response(stream, init);
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
}
