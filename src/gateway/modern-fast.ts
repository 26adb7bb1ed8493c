/**
 * The fast path of the gateway's 2026-07-28 downstream (issue 25.3): a `tools/call` or `resources/read` in
 * the plain shape an SDK v2 client sends — one request, its `_meta` exactly the per-request envelope (this version, the client's
 * identity, its declared capabilities without extensions or a log level), no retry material, headers that
 * agree with the body — is run by the SAME handler as the SDK path (modern-binding.ts's `ModernBinding`: rounds of an
 * ask as input_required, the gate, limits, pins, audit, step-up) without the SDK's per-request HTTP entry
 * (web Request, classification, a server and transport per request, web Response). Its answer is written
 * as the SDK writes it: a result already in the form the SDK's schemas keep unchanged (text content, a
 * boolean `isError`, plain `structuredContent` and `_meta`) is encoded here exactly as the SDK encodes it
 * (`resultType`, the gateway's `serverInfo`, `{ result, jsonrpc, id }`, one JSON body; a read as it comes
 * from modern-binding.ts's `privately`, which the SDK does not validate); any other outcome —
 * an error, input_required, another result, a step-up — is handed to an SDK handler that answers it as the
 * SDK path would have (the same request, the handler's outcome replayed, nothing run twice). Whatever is not
 * in the plain shape goes to the SDK path unchanged. `TOOLGATE_GATEWAY_FAST_PATH=off` switches it off.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createMcpHandler,
  isJsonContentType,
  Server as ModernServer,
  type AuthInfo,
  type McpHttpHandler,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { CallToolRequest, ReadResourceRequest } from '@modelcontextprotocol/sdk/types.js';
import { keepController, takeController } from '../gate/index.js';
import { MODERN_VERSION } from '../mcp/index.js';
import { HEADERS_WITHIN_MS } from './http-session.js';
import { serveModern } from './http-wire.js';
import { ModernBinding, ModernRequest } from './modern-binding.js';
import { modernHandler, PRIVATE_TTL_MS } from './modern.js';
import type { GatewayCore, GatewayRequestContext } from './session.js';
import { challengeOf, type Exchange, type StepUp } from './stepup.js';
import { isPlainObject } from './raw-results.js';
import { fastPathOff } from './upstream-raw.js';

const VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const INFO_KEY = 'io.modelcontextprotocol/clientInfo';
const CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';
/** The SDK's SSE keep-alive period (a stream with nothing to say for this long gets a comment). */
const KEEP_ALIVE_MS = 15_000;

/** The fast path of each modern handler the gateway made (looked up by http.ts). */
const fastPaths = new WeakMap<McpHttpHandler, ModernFastPath>();

/**
 * modern.ts's `modernHandler`, with its fast path (unless `TOOLGATE_GATEWAY_FAST_PATH=off` when it is made):
 * http.ts offers each 2026-07-28 POST to {@link serveModernFast} first.
 */
export function modernFastHandler(
  core: GatewayCore,
  context: () => GatewayRequestContext,
  onerror?: (error: Error) => void,
  resourceMetadata?: () => string | undefined,
): McpHttpHandler {
  const handler = modernHandler(core, context, onerror, resourceMetadata);
  if (!fastPathOff()) fastPaths.set(handler, new ModernFastPath(core, context, onerror, resourceMetadata));
  return handler;
}

/**
 * Serves one POST (`body` its parsed JSON) on the fast path of `handler` when it is in the plain shape;
 * false: nothing was done or written, the SDK path serves it.
 */
export function serveModernFast(
  handler: McpHttpHandler,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  auth: AuthInfo | undefined,
): boolean {
  const fast = fastPaths.get(handler);
  if (fast === undefined) return false;
  const call = plainModernCallOf(req, body);
  return call !== undefined && fast.serve(call, req, res, auth);
}

/** A request the fast path takes, as {@link plainModernCallOf} read it. */
export interface PlainModernCall {
  readonly body: Record<string, unknown>;
  readonly id: string | number;
  readonly method: 'tools/call' | 'resources/read';
  /** The tool's name, or the resource's URI (what `Mcp-Name` carries). */
  readonly name: string;
  readonly arguments: Record<string, unknown> | undefined;
  readonly envelope: Record<string, unknown>;
}

/** Whether every key of `object` is one of `keys`. */
function only(object: Record<string, unknown>, keys: readonly string[]): boolean {
  for (const key of Object.keys(object)) if (!keys.includes(key)) return false;
  return true;
}

/** A plain object zod's records and loose objects give back as it is (no own `__proto__`). */
function plainRecord(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && !Object.hasOwn(value, '__proto__');
}

/** An empty plain object, or one of boolean members named `keys`. */
function flags(value: unknown, keys: readonly string[]): boolean {
  if (!plainRecord(value) || !only(value, keys)) return false;
  for (const key of Object.keys(value)) if (typeof value[key] !== 'boolean') return false;
  return true;
}

/**
 * Client capabilities as the envelope's schema takes them unchanged, with nothing the fast path leaves to
 * the SDK path (extensions such as tasks, experimental members): elicitation (form, url), sampling
 * (context, tools) and roots (listChanged), each in its plain form.
 */
function plainCapabilities(value: unknown): boolean {
  if (!plainRecord(value) || !only(value, ['elicitation', 'sampling', 'roots'])) return false;
  const { elicitation, sampling, roots } = value;
  if (elicitation !== undefined) {
    if (!plainRecord(elicitation) || !only(elicitation, ['form', 'url'])) return false;
    if (elicitation['form'] !== undefined && !flags(elicitation['form'], ['applyDefaults'])) return false;
    if (elicitation['url'] !== undefined && !flags(elicitation['url'], [])) return false;
  }
  if (sampling !== undefined) {
    if (!plainRecord(sampling) || !only(sampling, ['context', 'tools'])) return false;
    for (const key of Object.keys(sampling)) if (!flags(sampling[key], [])) return false;
  }
  return roots === undefined || flags(roots, ['listChanged']);
}

/** The one value of header `name`, or undefined when it is absent or sent more than once. */
function single(req: IncomingMessage, name: string): string | undefined {
  let count = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === name.length && raw[i]!.toLowerCase() === name) count++;
  const value = req.headers[name];
  return count === 1 && typeof value === 'string' ? value : undefined;
}

/**
 * `body` (as JSON.parse gave it) when it is a `tools/call` the fast path takes — one request whose keys,
 * id, params, arguments and `_meta` envelope the SDK's schemas take as they are, with no retry material
 * (`requestState`, `inputResponses`), no task, no log level, no progress token, capabilities in their
 * plain form; and headers that agree with it exactly (one JSON `Content-Type`, `MCP-Protocol-Version`,
 * `Mcp-Method`, `Mcp-Name` each once and equal to the body's) — else undefined (the SDK path serves it).
 */
export function plainModernCallOf(req: IncomingMessage, body: unknown): PlainModernCall | undefined {
  if (!isPlainObject(body) || body['jsonrpc'] !== '2.0') return undefined;
  const method = body['method'];
  if (method !== 'tools/call' && method !== 'resources/read') return undefined;
  const id = body['id'];
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isSafeInteger(id))) return undefined;
  const params = body['params'];
  if (!only(body, ['jsonrpc', 'id', 'method', 'params']) || !plainRecord(params)) return undefined;
  if (!only(params, method === 'tools/call' ? ['name', 'arguments', '_meta'] : ['uri', '_meta'])) return undefined;
  const name = method === 'tools/call' ? params['name'] : params['uri'];
  const args = params['arguments'];
  const meta = params['_meta'];
  if (typeof name !== 'string' || name === '' || name.startsWith('=?')) return undefined;
  if (args !== undefined && !plainRecord(args)) return undefined;
  if (!plainRecord(meta) || !only(meta, [VERSION_KEY, INFO_KEY, CAPABILITIES_KEY])) return undefined;
  const info = meta[INFO_KEY];
  if (meta[VERSION_KEY] !== MODERN_VERSION || !plainRecord(info) || !only(info, ['name', 'version', 'title']))
    return undefined;
  if (typeof info['name'] !== 'string' || typeof info['version'] !== 'string') return undefined;
  if (info['title'] !== undefined && typeof info['title'] !== 'string') return undefined;
  if (!plainCapabilities(meta[CAPABILITIES_KEY])) return undefined;
  const type = single(req, 'content-type');
  if (type === undefined || !isJsonContentType(type)) return undefined;
  if (single(req, 'mcp-protocol-version') !== MODERN_VERSION || single(req, 'mcp-method') !== method) return undefined;
  if (single(req, 'mcp-name') !== name) return undefined;
  const envelope = { [VERSION_KEY]: meta[VERSION_KEY], [INFO_KEY]: info, [CAPABILITIES_KEY]: meta[CAPABILITIES_KEY] };
  return { body, id, method, name, arguments: args, envelope };
}

/** A fast-path request's `requestState()`: it carries none. */
const noState = (): undefined => undefined;

/** What the handler gave: a result, or what it threw. */
type Outcome = { readonly result: unknown } | { readonly error: unknown };

/** The outcome an SDK handler replays (its tools/call answers with it), and the step-up the call asked for. */
interface Replay {
  readonly outcome: Outcome;
  readonly stepUp: StepUp | undefined;
}

/** One modern handler's fast path. */
class ModernFastPath {
  /** The 2026-07-28 handlers, bound once (modern-binding.ts): the SDK path's, run without the SDK. */
  readonly #binding: ModernBinding;
  readonly #serverInfo: { readonly name: string; readonly version: string };
  /** Answers an outcome as the SDK path does, for what is not encoded here. */
  readonly #replay: McpHttpHandler;
  /**
   * Each replay in flight by its request's parsed body (this path's own object), then by the web Request
   * the SDK hands its factory (`requestInfo`): passed, not async-local storage (issue 25).
   */
  readonly #replays = new WeakMap<object, Replay>();

  constructor(
    core: GatewayCore,
    context: () => GatewayRequestContext,
    onerror: ((error: Error) => void) | undefined,
    resourceMetadata: (() => string | undefined) | undefined,
  ) {
    this.#binding = new ModernBinding(core, context);
    this.#serverInfo = { name: core.name, version: '0.2.0' };
    const sdk = createMcpHandler(
      ({ requestInfo }) => {
        const outcome = requestInfo && this.#replays.get(requestInfo)?.outcome;
        // The request's own server as modern.ts makes it, for what encoding reads: its identity, the read's cache hint.
        const server = new ModernServer(this.#serverInfo, {
          capabilities: { tools: {}, resources: {} },
          cacheHints: { 'resources/read': { ttlMs: PRIVATE_TTL_MS, cacheScope: 'private' } },
        });
        const replayed = async (): Promise<never> => {
          if (outcome === undefined) throw new Error('toolgate gateway: no outcome to answer with');
          if ('error' in outcome) throw outcome.error;
          return outcome.result as never;
        };
        server.setRequestHandler('tools/call', replayed);
        server.setRequestHandler('resources/read', replayed);
        return server;
      },
      { legacy: 'reject', ...(onerror ? { onerror } : {}) },
    );
    // A step-up answers 403 and the challenge, its JSON-RPC body kept (modern.ts's wrapper, alike).
    const fetch: McpHttpHandler['fetch'] = async (request, options) => {
      const body = options?.parsedBody;
      const replay = body !== null && typeof body === 'object' ? this.#replays.get(body) : undefined;
      if (replay !== undefined) this.#replays.set(request, replay);
      const answer = await sdk.fetch(request, options);
      const stepUp = replay?.stepUp;
      if (!stepUp) return answer;
      const headers = new Headers(answer.headers);
      headers.set('www-authenticate', challengeOf(stepUp, resourceMetadata?.()));
      return new Response(await answer.text(), { status: 403, headers });
    };
    this.#replay = { ...sdk, fetch };
  }

  /** Runs `call` and answers it on `res`; false (nothing done) when the caller is shown no tools. */
  serve(call: PlainModernCall, req: IncomingMessage, res: ServerResponse, auth: AuthInfo | undefined): boolean {
    // Nothing has run yet: a throw here (the context refused, say) is the SDK path's to answer, as it would.
    const binding = this.#binding;
    // This request's own exchange (the fast path takes no extension: no tasks); a refused call's step-up lands here.
    const exchange: Exchange = { tasks: false };
    let state: ModernRequest;
    try {
      // Served only where the SDK path would bind the handler: tools shown to this caller, resources offered.
      const caller = binding.callerOf(auth);
      if (call.method === 'tools/call' ? !binding.showsTools(caller) : !binding.offers('resources')) return false;
      state = new ModernRequest(binding, exchange, undefined);
    } catch {
      return false;
    }
    // The request's signal: a finished request's controller when one is spare (issue 25: making one and its
    // signal is ~7 µs here), given back once its response closed having written the whole answer, never
    // aborted and with no listener left on its signal (the gate's and the upstream call's are removed when
    // they settle; controller-pool.ts), as the stdio fast path reuses its requests' (fastpath.ts).
    const cancelled = takeController();
    res.on('close', () => {
      if (!res.writableFinished) cancelled.abort();
      else keepController(cancelled);
    });
    const answer = new FastAnswer(res);
    const ctx = {
      sessionId: undefined,
      mcpReq: {
        id: call.id,
        method: call.method,
        _meta: undefined,
        envelope: call.envelope,
        requestState: noState,
        signal: cancelled.signal,
        notify: (notification: Record<string, unknown>) => answer.notify(notification),
      },
      http: auth ? { authInfo: auth } : undefined,
    } as unknown as ServerContext;
    const params =
      call.method === 'resources/read'
        ? { uri: call.name }
        : call.arguments === undefined
          ? { name: call.name }
          : { name: call.name, arguments: call.arguments };
    void (async (): Promise<Outcome> => {
      try {
        return {
          result:
            call.method === 'tools/call'
              ? await binding.callTool(state, params as CallToolRequest['params'], ctx)
              : await binding.readResource(state, params as ReadResourceRequest['params'], ctx),
        };
      } catch (error) {
        return { error };
      }
    })()
      .then(async (outcome) => {
        const stepUp = exchange.stepUp;
        // A request the client gave up on is not answered (the SDK's 499, on a closed connection).
        if (cancelled.signal.aborted) return answer.gone();
        const encoded =
          stepUp !== undefined || !('result' in outcome)
            ? undefined
            : call.method === 'tools/call'
              ? this.#encoded(outcome.result)
              : this.#encodedRead(outcome.result);
        if (encoded !== undefined) return answer.end({ result: encoded, jsonrpc: '2.0', id: call.id });
        if (answer.streaming) return answer.failed(call.id);
        this.#replays.set(call.body, { outcome, stepUp });
        await serveModern(this.#replay, req, res, call.body, auth).finally(() => this.#replays.delete(call.body));
      })
      .catch(() => answer.failed(call.id));
    return true;
  }

  /**
   * A resources/read result as the SDK encodes it (no schema runs on it there): `resultType` stamped, the
   * cache fields kept (modern-binding.ts's `privately` set them; valid, else undefined), the gateway's `serverInfo`
   * added to a plain `_meta` that names none; undefined for anything else (a `resultType`, another member).
   */
  #encodedRead(result: unknown): Record<string, unknown> | undefined {
    if (!plainRecord(result) || !only(result, ['contents', 'ttlMs', 'cacheScope', '_meta'])) return undefined;
    const ttl = result['ttlMs'];
    if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl < 0) return undefined;
    if (result['cacheScope'] !== 'private' && result['cacheScope'] !== 'public') return undefined;
    const meta = result['_meta'];
    if (meta !== undefined && !plainRecord(meta)) return undefined;
    const encoded: Record<string, unknown> = { ...result, resultType: 'complete' };
    if (meta === undefined) encoded['_meta'] = { [SERVER_INFO_KEY]: this.#serverInfo };
    else if (meta[SERVER_INFO_KEY] === undefined) encoded['_meta'] = { ...meta, [SERVER_INFO_KEY]: this.#serverInfo };
    return encoded;
  }

  /**
   * A tools/call result as the SDK encodes it, when it is in the form {@link plainModernResult} reads:
   * its members in the order the SDK's schema gives them back (`_meta`, `content`, `structuredContent`,
   * `isError`, then the `resultType` it stamps) and the gateway's `serverInfo` in a `_meta` of its own
   * after them when the result has none; else undefined.
   */
  #encoded(result: unknown): Record<string, unknown> | undefined {
    if (!plainModernResult(result)) return undefined;
    const encoded: Record<string, unknown> = {};
    const meta = result['_meta'] as Record<string, { name: string; version: string }> | undefined;
    if (meta !== undefined) {
      const info = meta[SERVER_INFO_KEY]!;
      encoded['_meta'] = { [SERVER_INFO_KEY]: { name: info.name, version: info.version } };
    }
    encoded['content'] = (result['content'] as { text: string }[]).map((block) => ({ type: 'text', text: block.text }));
    if ('structuredContent' in result) encoded['structuredContent'] = result['structuredContent'];
    if ('isError' in result) encoded['isError'] = result['isError'];
    encoded['resultType'] = 'complete';
    if (meta === undefined) encoded['_meta'] = { [SERVER_INFO_KEY]: this.#serverInfo };
    return encoded;
  }
}

/**
 * Whether a tools/call result is one the fast path encodes as the SDK would: text blocks of `type` and
 * `text` only, a boolean `isError`, a plain `structuredContent`, a `_meta` that is absent or only the
 * upstream's `serverInfo` (name and version strings), and no other member (`resultType` included).
 */
export function plainModernResult(result: unknown): result is Record<string, unknown> {
  if (!plainRecord(result) || !only(result, ['content', 'isError', 'structuredContent', '_meta'])) return false;
  if (!Array.isArray(result['content'])) return false;
  if (result['isError'] !== undefined && typeof result['isError'] !== 'boolean') return false;
  if (result['structuredContent'] !== undefined && !plainRecord(result['structuredContent'])) return false;
  const meta = result['_meta'];
  if (meta !== undefined) {
    if (!plainRecord(meta) || !only(meta, [SERVER_INFO_KEY])) return false;
    const info = meta[SERVER_INFO_KEY];
    if (!plainRecord(info) || !only(info, ['name', 'version'])) return false;
    if (typeof info['name'] !== 'string' || typeof info['version'] !== 'string') return false;
  }
  for (const block of result['content'] as unknown[])
    if (!isPlainObject(block) || !only(block, ['type', 'text']) || block['type'] !== 'text') return false;
    else if (typeof block['text'] !== 'string') return false;
  return true;
}

/**
 * One fast-path answer on its response, as the SDK's per-request transport and http-session.ts's
 * writeResponse write it: one JSON body; or, once a notification came before the result, an SSE stream
 * (headers with the first event or after {@link HEADERS_WITHIN_MS}, keep-alive comments) ending with it.
 */
class FastAnswer {
  readonly #res: ServerResponse;
  #timer: NodeJS.Timeout | undefined;
  #keepAlive: NodeJS.Timeout | undefined;
  streaming = false;

  constructor(res: ServerResponse) {
    this.#res = res;
  }

  async notify(notification: Record<string, unknown>): Promise<void> {
    const res = this.#res;
    if (res.destroyed || res.writableEnded) return;
    if (!this.streaming) {
      this.streaming = true;
      res.writeHead(200, {
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'content-type': 'text/event-stream',
        'x-accel-buffering': 'no',
      });
      this.#timer = setTimeout(() => res.flushHeaders(), HEADERS_WITHIN_MS);
      this.#timer.unref();
      this.#keepAlive = setInterval(() => res.write(': keepalive\n\n'), KEEP_ALIVE_MS);
      this.#keepAlive.unref();
    }
    clearTimeout(this.#timer);
    res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...notification })}\n\n`);
  }

  /** The answer: the JSON body, or the stream's last event. */
  end(message: Record<string, unknown>): void {
    const res = this.#res;
    this.#stop();
    if (!this.streaming) {
      // Framed by its length, as the upstream frames its own (not chunked: one write of two pieces, and the
      // client reads one body instead of a chunk and the last chunk).
      const text = JSON.stringify(message);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
      return;
    }
    res.end(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  /** The client went away: the SDK path's 499 without a body (on a connection already closed). */
  gone(): void {
    this.#stop();
    if (this.streaming) this.#res.end();
    else this.#res.writeHead(499).end();
  }

  /** Nothing could be answered as the SDK would (fail closed): an internal error, the call's outcome unsaid. */
  failed(id: string | number): void {
    const res = this.#res;
    this.#stop();
    const message = { jsonrpc: '2.0', id, error: { code: -32603, message: 'Internal error' } };
    if (res.writableEnded || res.destroyed) return;
    if (this.streaming) res.end(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    else if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify(message));
    else res.end();
  }

  #stop(): void {
    clearTimeout(this.#timer);
    clearInterval(this.#keepAlive);
  }
}
