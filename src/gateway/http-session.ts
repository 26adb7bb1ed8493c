/**
 * The 2025-era Streamable HTTP server transport of the gateway's listener, on Node's request and response
 * without the SDK's adapter (issue 25.3). The SDK's `StreamableHTTPServerTransport` wraps its web-standard
 * transport in `@hono/node-server`, which per request makes a new listener, waits a `setTimeout` for the
 * first chunk of an SSE answer before writing anything, sends the headers in a write of their own, and the
 * answer's last chunk and its end in two more. Here the same web-standard transport (sessions, SSE streams,
 * every check) is given the request's method, URL and headers, and its answer is written as it comes: the
 * headers go with the first chunk of a POST's stream (or after {@link HEADERS_WITHIN_MS} with none).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';

/** How long a POST's SSE answer may hold its headers back waiting for its first event (a slow call's client sees 200 by then). */
export const HEADERS_WITHIN_MS = 250;

/** The web-standard transport, served from a Node request (`req.auth` is the verified token, as the SDK's adapter reads it). */
export class NodeStreamableHttp extends WebStandardStreamableHTTPServerTransport {
  #closed = false;

  /** Whether the session was closed (the SDK's transport answers 404 from then on). */
  get closed(): boolean {
    return this.#closed;
  }

  override async close(): Promise<void> {
    this.#closed = true;
    return super.close();
  }

  /** Answers one request of this transport's session (or the request that opens it) on `res`. */
  async handleNode(
    req: IncomingMessage & { auth?: AuthInfo },
    res: ServerResponse,
    parsedBody?: unknown,
  ): Promise<void> {
    const response = await this.handleRequest(requestOf(req), {
      ...(req.auth ? { authInfo: req.auth } : {}),
      ...(parsedBody !== undefined ? { parsedBody } : {}),
    });
    await writeResponse(response, res, req.method === 'POST');
  }
}

/**
 * What the web-standard transport reads of a request — its method, URL and headers — without a web
 * Request's construction (the body travels parsed beside it; a POST's is always read by the listener).
 */
function requestOf(req: IncomingMessage): Request {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  const url = `http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`;
  return { method: req.method ?? 'GET', url, headers } as Partial<Request> as Request;
}

/** Writes a web Response on a Node response: a body at once, or an SSE stream chunk by chunk until it ends or the client goes. */
export async function writeResponse(response: Response, res: ServerResponse, holdHeaders: boolean): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  const body = response.body;
  if (body === null) return void res.writeHead(response.status, headers).end();
  if (!headers['content-type']?.startsWith('text/event-stream')) {
    const bytes = Buffer.from(await response.arrayBuffer());
    return void res.writeHead(response.status, headers).end(bytes);
  }
  res.writeHead(response.status, headers);
  // A stream the client waits on to open (GET) is announced now; a POST's answer goes with its first event.
  let timer: NodeJS.Timeout | undefined;
  if (!holdHeaders) res.flushHeaders();
  else {
    timer = setTimeout(() => res.flushHeaders(), HEADERS_WITHIN_MS);
    timer.unref();
  }
  const reader = body.getReader();
  const cancel = (): void => void reader.cancel().catch(() => undefined);
  res.once('close', cancel);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      clearTimeout(timer);
      // Not corked to send an answer's end with it: on Node 24 a corked first write went out before its
      // headers (the client read a body where the status line belonged).
      if (!res.write(value)) await drained(res);
    }
  } catch {
    // the client went away (the stream was cancelled)
  } finally {
    clearTimeout(timer);
    res.off('close', cancel);
  }
  res.end();
}

/** Resolves when `res` can take more, or is closed. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
