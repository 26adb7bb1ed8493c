/**
 * The gateway's fast path towards a 2026-07-28 Streamable HTTP upstream (issue 25.3): a `tools/call` or
 * `resources/read` of a 2026-07-28 request is sent by upstream-raw.ts's RawRequests (an id of the gateway's own,
 * the shared deadlines, stopped by its request signal as the SDK stops it) and POSTed by upstream-raw-http.ts,
 * instead of through the SDK Client's request funnel. What the Client does around the POST is done here with the
 * Client's own pieces: the message is enveloped by its `_outboundMetaEnvelope` (the same `_meta`, members in the
 * same order), and the answer's result is read as its funnel reads it — the era codec's `decodeResult` (resultType,
 * the wire schema), `input_required` kept as the manual mode keeps it, the era's result schema — except that a
 * result in the one plain shape ({@link plainModernCallResult}, {@link plainModernReadResult}) is given the value
 * those schemas give it without running them. An answer that is an error, or that the era check (src/mcp/era.ts,
 * on the transport's tap) refused, fails the call as the Client fails it.
 */
import {
  PROTOCOL_VERSION_META_KEY,
  SdkError,
  SdkErrorCode,
  type Client,
  type JSONRPCMessage,
  type StreamableHTTPClientTransport,
  type Tool as McpTool,
} from '@modelcontextprotocol/client';
import { MODERN_VERSION } from '../mcp/index.js';
import { eraResult, isPlainObject } from './raw-results.js';
import { type ModernWire, type RawOptions } from './upstream-raw.js';

/** The Client's protected members a 2026-07-28 raw request uses (a subclass hands them over). */
export interface ModernClientParts {
  envelope(): Readonly<Record<string, unknown>> | undefined;
  codec(): ReturnType<Client['_wireCodec']>;
}

/** The wire of one upstream's 2026-07-28 raw requests, read through the Client's own parts. */
export function modernWire(parts: ModernClientParts): ModernWire {
  return {
    envelope(message) {
      // The Client's `_envelopeOutbound`: its envelope first, the request's own `_meta` keys after (they win;
      // a client's own `io.modelcontextprotocol/…` keys were dropped on entry, upstream-client.ts).
      const envelope = parts.envelope();
      if (envelope === undefined) throw new Error('toolgate gateway: no 2026-07-28 envelope; nothing was sent');
      const params = message.params;
      return {
        ...message,
        params: { ...params, _meta: { ...envelope, ...(params['_meta'] as Record<string, unknown> | undefined) } },
      } as JSONRPCMessage;
    },
    result(method, raw, options) {
      return modernResult(parts.codec(), method, raw, options);
    },
  };
}

/** A result as the SDK Client's request funnel resolves it on the 2026-07-28 era; throws as it rejects. */
function modernResult(
  codec: ReturnType<Client['_wireCodec']>,
  method: string,
  raw: unknown,
  options: RawOptions,
): unknown {
  if (method === 'tools/call' && plainModernCallResult(raw)) return asValidated(raw);
  if (method === 'resources/read' && plainModernReadResult(raw)) return readAsValidated(raw);
  const decoded = codec.decodeResult(method, raw);
  if (decoded.kind === 'invalid') throw decoded.error;
  if (decoded.kind === 'input_required') {
    // The manual mode's value (the SDK's manualInputRequiredValue); without it the Client would fulfil the
    // round itself, which a raw request never asks for.
    if (options.allowInputRequired !== true)
      throw new SdkError(
        SdkErrorCode.UnsupportedResultType,
        `Unsupported result type 'input_required' for ${method}: a raw request does not fulfil rounds`,
        { resultType: 'input_required', method },
      );
    return {
      resultType: 'input_required',
      inputRequests: decoded.inputRequests,
      ...(decoded.requestState !== undefined && { requestState: decoded.requestState }),
      ...(decoded._meta !== undefined && { _meta: decoded._meta }),
    };
  }
  if (decoded.kind !== 'complete')
    throw new SdkError(
      SdkErrorCode.UnsupportedResultType,
      `Unsupported result type '${(decoded as { kind: string }).kind}' for ${method}`,
      { resultType: (decoded as { kind: string }).kind, method },
    );
  return eraResult(codec, method, decoded.result);
}

const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** A plain object without an own `__proto__` (which a schema's copy would not keep). */
function ownPlain(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && !Object.hasOwn(value, '__proto__');
}

/** Whether every key of `value` is one of `keys`. */
function only(value: Record<string, unknown>, keys: readonly string[]): boolean {
  for (const key in value) if (!keys.includes(key)) return false;
  return true;
}

/**
 * Whether a `tools/call` result is `resultType: "complete"` and otherwise in the one shape the era's wire and
 * result schemas take and give back member for member: text blocks of `type` and `text` only, a boolean
 * `isError`, a plain `structuredContent`, a `_meta` absent or only a serverInfo of a `name` and a `version`
 * string, nothing else. Anything else is read by the SDK's codec.
 */
export function plainModernCallResult(raw: unknown): raw is Record<string, unknown> {
  if (!ownPlain(raw) || raw['resultType'] !== 'complete') return false;
  if (!only(raw, ['resultType', 'content', 'isError', 'structuredContent', '_meta'])) return false;
  const content = raw['content'];
  if (!Array.isArray(content)) return false;
  if (raw['isError'] !== undefined && typeof raw['isError'] !== 'boolean') return false;
  if (raw['structuredContent'] !== undefined && !ownPlain(raw['structuredContent'])) return false;
  if (!serverInfoOnlyMeta(raw['_meta'])) return false;
  for (const block of content as unknown[])
    if (!ownPlain(block) || !only(block, ['type', 'text']) || block['type'] !== 'text') return false;
    else if (typeof block['text'] !== 'string') return false;
  return true;
}

/** A plain result as the era's result schema gives it back: `resultType` dropped, the schema's member order. */
function asValidated(raw: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (raw['_meta'] !== undefined) out['_meta'] = metaAsValidated(raw['_meta'] as Record<string, unknown>);
  out['content'] = (raw['content'] as { text: string }[]).map((block) => ({ type: 'text', text: block.text }));
  if (raw['structuredContent'] !== undefined) out['structuredContent'] = raw['structuredContent'];
  if (raw['isError'] !== undefined) out['isError'] = raw['isError'];
  return out;
}

/**
 * Whether a `resources/read` result is `resultType: "complete"` and otherwise in the one shape the era's
 * schemas take and give back member for member: its cache fields (`ttlMs` a safe integer ≥ 0, `cacheScope`
 * public or private, both required in this revision), text contents of `uri`, `text` and perhaps `mimeType`
 * (strings), a `_meta` as for {@link plainModernCallResult}, nothing else.
 */
export function plainModernReadResult(raw: unknown): raw is Record<string, unknown> {
  if (!ownPlain(raw) || raw['resultType'] !== 'complete') return false;
  if (!only(raw, ['resultType', 'contents', 'ttlMs', 'cacheScope', '_meta'])) return false;
  const ttl = raw['ttlMs'];
  if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl < 0) return false;
  if (raw['cacheScope'] !== 'public' && raw['cacheScope'] !== 'private') return false;
  if (!serverInfoOnlyMeta(raw['_meta'])) return false;
  const contents = raw['contents'];
  if (!Array.isArray(contents)) return false;
  for (const item of contents as unknown[]) {
    if (!ownPlain(item) || !only(item, ['uri', 'text', 'mimeType'])) return false;
    if (typeof item['uri'] !== 'string' || typeof item['text'] !== 'string') return false;
    if (item['mimeType'] !== undefined && typeof item['mimeType'] !== 'string') return false;
  }
  return true;
}

/**
 * Whether a 2026-07-28 result's `_meta` is absent or only a serverInfo of a `name` and a `version` string: the one
 * `_meta` the modern raw path takes as it is (any other goes through the SDK's codec). Stricter than raw-results.ts's
 * `plainResultMeta`, the 2025-era rule, which also keeps keys outside `io.modelcontextprotocol/`.
 */
function serverInfoOnlyMeta(meta: unknown): boolean {
  if (meta === undefined) return true;
  if (!ownPlain(meta) || !only(meta, [SERVER_INFO])) return false;
  const info = meta[SERVER_INFO];
  if (info === undefined) return true;
  return (
    ownPlain(info) &&
    only(info, ['name', 'version']) &&
    typeof info['name'] === 'string' &&
    typeof info['version'] === 'string'
  );
}

/** A plain read result as the era's result schema gives it back: `resultType` dropped, the schema's order. */
function readAsValidated(raw: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (raw['_meta'] !== undefined) out['_meta'] = metaAsValidated(raw['_meta'] as Record<string, unknown>);
  out['ttlMs'] = raw['ttlMs'];
  out['cacheScope'] = raw['cacheScope'];
  out['contents'] = (raw['contents'] as Record<string, string>[]).map((item) =>
    item['mimeType'] === undefined
      ? { uri: item['uri'], text: item['text'] }
      : { uri: item['uri'], mimeType: item['mimeType'], text: item['text'] },
  );
  return out;
}

/** A plain result `_meta` as the schemas give it back (the serverInfo's members in their order). */
function metaAsValidated(meta: Record<string, unknown>): Record<string, unknown> {
  const info = meta[SERVER_INFO] as { name: string; version: string } | undefined;
  return info === undefined ? {} : { [SERVER_INFO]: { name: info.name, version: info.version } };
}

/** Tool definitions whose input schema declares `x-mcp-header` (the SDK mirrors them as headers): the SDK's way. */
const mirrored = new WeakMap<McpTool, boolean>();

/** Whether a tool's calls may go raw: its input schema names no `x-mcp-header` anywhere (read once per definition). */
export function sendsNoHeaders(definition: McpTool): boolean {
  let found = mirrored.get(definition);
  if (found === undefined) {
    found = JSON.stringify(definition.inputSchema ?? null).includes('x-mcp-header');
    mirrored.set(definition, found);
  }
  return !found;
}

/**
 * The `Mcp-Name` of a 2026-07-28 request the SDK Client sends that is POSTed raw: a `tools/call` or
 * `resources/read` carrying this version in its envelope, sent without headers of its own, resumption or
 * a resumption callback, whose name (or URI) the SDK sends as it is; else undefined (the SDK sends it).
 */
export function modernNameOf(
  message: JSONRPCMessage,
  options: Parameters<StreamableHTTPClientTransport['send']>[1],
): string | undefined {
  if (options?.headers !== undefined || options?.resumptionToken !== undefined) return undefined;
  if (options?.onresumptiontoken !== undefined) return undefined;
  const { jsonrpc, id, method, params } = message as {
    jsonrpc?: unknown;
    id?: unknown;
    method?: unknown;
    params?: unknown;
  };
  if (jsonrpc !== '2.0' || (method !== 'tools/call' && method !== 'resources/read')) return undefined;
  if (typeof id !== 'string' && typeof id !== 'number') return undefined;
  if (!isPlainObject(params) || !isPlainObject(params['_meta'])) return undefined;
  if (params['_meta'][PROTOCOL_VERSION_META_KEY] !== MODERN_VERSION) return undefined;
  const name = params[method === 'tools/call' ? 'name' : 'uri'];
  return typeof name === 'string' && asIs(name) ? name : undefined;
}

/** Whether a request carries a 2026-07-28 envelope's version key in its `_meta`. */
export function hasModernEnvelope(message: JSONRPCMessage): boolean {
  const params = (message as { params?: unknown }).params;
  return isPlainObject(params) && isPlainObject(params['_meta']) && PROTOCOL_VERSION_META_KEY in params['_meta'];
}

/** Whether the SDK sends a header value as it is (its `encodeMcpParamValue` base64-encodes any other). */
export function asIs(value: string): boolean {
  if (value.length === 0 || value !== value.trim()) return false;
  if (value.startsWith('=?base64?') && value.endsWith('?=')) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c !== 9 && (c < 32 || c > 126)) return false;
  }
  return true;
}

/**
 * `params` without the `io.modelcontextprotocol/…` keys a client put in its request's `_meta` (the protocol's
 * envelope: log level, clientInfo, capabilities, version are the gateway's to say upstream, never a client's);
 * its other `_meta` (a progress token, trace context) goes on. As they are when there is none.
 */
export function withoutClientEnvelope<P extends { _meta?: Record<string, unknown> | undefined }>(params: P): P {
  const meta = params._meta;
  if (meta === undefined || meta === null || typeof meta !== 'object') return params;
  const keys = Object.keys(meta).filter((key) => key.startsWith('io.modelcontextprotocol/'));
  if (keys.length === 0) return params;
  const kept: Record<string, unknown> = { ...meta };
  for (const key of keys) delete kept[key];
  return { ...params, _meta: kept };
}
