/**
 * The shapes of an upstream's result that the SDKs' zod schemas give back unchanged (issue 25.2): a raw answer in
 * one of them is handed on as parsed, anything else is validated as the SDK Client validates it — its wire codec's
 * result schema, its error ({@link eraResult}; upstream-raw.ts, upstream-raw-modern.ts, fastpath.ts).
 */
import {
  Client,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  type CallToolResult,
  type JsonSchemaValidator,
} from '@modelcontextprotocol/client';
import { cutSaid, OUTPUT_ISSUES_MAX_CHARS } from '../mcp/index.js';

/** The SDK Client's wire codec of one protocol era (its `_wireCodec()`). */
export type WireCodec = ReturnType<Client['_wireCodec']>;

/** A plain object: its prototype Object.prototype or null, not an array. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A plain object a zod record or loose object gives back unchanged (no own `__proto__`, which a copy would not keep). */
function plainRecord(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && !Object.hasOwn(value, '__proto__');
}

const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/**
 * A result's `_meta` the SDK's JSON-RPC schema keeps as it is: absent, or none of the keys the schemas check but a
 * well-formed serverInfo (a `name` and a `version`, nothing else). The schema drops a serverInfo that is not an
 * Implementation (`.catch(undefined)`) and strips an Implementation's keys of its own, which the 2025-era codec's
 * result schema checks neither: a raw answer whose `_meta` is anything else is parsed by the SDK's schema
 * (upstream-raw.ts's rawAnswer, upstream-raw-post.ts's plainAnswerTo).
 */
export function plainResultMeta(meta: unknown): boolean {
  if (meta === undefined) return true;
  if (!plainRecord(meta)) return false;
  for (const key of Object.keys(meta)) {
    if (key === SERVER_INFO) {
      const info = meta[key];
      if (!plainRecord(info) || Object.keys(info).length !== 2) return false;
      if (typeof info['name'] !== 'string' || typeof info['version'] !== 'string') return false;
    } else if (key === 'progressToken' || key.startsWith('io.modelcontextprotocol/')) return false;
  }
  return true;
}

/**
 * A result's `_meta` that every schema passes through unchanged: absent, or a plain object with none of the
 * keys the SDKs' schemas check (`progressToken`, `io.modelcontextprotocol/…`).
 */
function plainMeta(meta: unknown): boolean {
  if (meta === undefined) return true;
  if (!plainRecord(meta)) return false;
  for (const key of Object.keys(meta))
    if (key === 'progressToken' || key.startsWith('io.modelcontextprotocol/')) return false;
  return true;
}

/** A text block exactly as the schemas give it back: `type`, `text` and perhaps a plain `_meta`, nothing else. */
function plainTextBlock(block: unknown): boolean {
  if (!isPlainObject(block) || block['type'] !== 'text' || typeof block['text'] !== 'string') return false;
  for (const key of Object.keys(block))
    if (key !== 'type' && key !== 'text' && !(key === '_meta' && plainRecord(block['_meta']))) return false;
  return true;
}

/**
 * Whether a `tools/call` result is already what the SDKs' zod schemas (v2's on the upstream side, v1's on
 * the client side) would return for it — text content only, `isError` a boolean, `structuredContent` a plain
 * object, a plain `_meta` — so that validating it would change nothing. Anything else is validated by the
 * schemas.
 */
export function plainCallToolResult(result: unknown): boolean {
  if (!plainRecord(result) || !Array.isArray(result['content'])) return false;
  if (result['isError'] !== undefined && typeof result['isError'] !== 'boolean') return false;
  if (result['structuredContent'] !== undefined && !plainRecord(result['structuredContent'])) return false;
  if (!plainMeta(result['_meta'])) return false;
  for (const block of result['content'] as unknown[]) if (!plainTextBlock(block)) return false;
  return true;
}

/** The same for a `resources/read` result: text contents (`uri`, `text`, perhaps `mimeType` and `_meta`). */
export function plainReadResourceResult(result: unknown): boolean {
  if (!plainRecord(result) || !Array.isArray(result['contents'])) return false;
  if (!plainMeta(result['_meta'])) return false;
  for (const item of result['contents'] as unknown[]) {
    if (!isPlainObject(item) || typeof item['uri'] !== 'string' || typeof item['text'] !== 'string') return false;
    for (const key of Object.keys(item))
      if (
        key !== 'uri' &&
        key !== 'text' &&
        !(key === 'mimeType' && typeof item['mimeType'] === 'string') &&
        !(key === '_meta' && plainRecord(item['_meta']))
      )
        return false;
  }
  return true;
}

/**
 * A 2025-era `tools/call` answer's result as the SDK Client hands it on: validated by the Client's 2025-era codec
 * ({@link legacyResult}) unless already in the form that validation returns unchanged, then its structured
 * content checked against the tool's output schema ({@link outputChecked}). Throws the SDK's errors.
 */
export function rawToolResult(
  raw: unknown,
  validator: JsonSchemaValidator<unknown> | undefined,
  name: string,
): CallToolResult {
  const result = plainCallToolResult(raw)
    ? (raw as CallToolResult)
    : (legacyResult('tools/call', raw) as CallToolResult);
  return outputChecked(result, validator, name);
}

/** `result` when its structured content passes the tool's output schema (`validator`); else the SDK's error. */
export function outputChecked(
  result: CallToolResult,
  validator: JsonSchemaValidator<unknown> | undefined,
  name: string,
): CallToolResult {
  if (!validator || result.isError) return result;
  if (result.structuredContent === undefined)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidRequest,
      `Tool ${name} has an output schema but did not return structured content`,
    );
  let outcome: ReturnType<typeof validator>;
  try {
    outcome = validator(result.structuredContent);
  } catch (error) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `Failed to validate structured content: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (!outcome.valid)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `Structured content does not match the tool's output schema: ${outcome.errorMessage}`,
    );
  return result;
}

/**
 * A result as the SDK Client's request funnel resolves it once decoded: the value the era codec's result schema
 * gives, or the funnel's error — `Invalid result for <method>: ` and the codec's message (the zod error's text).
 */
export function eraResult(codec: WireCodec, method: string, raw: unknown): unknown {
  const outcome = codec.validateResult(method, raw);
  if (outcome.ok) return outcome.value;
  throw boundedRefusal(
    new SdkError(
      SdkErrorCode.InvalidResult,
      `Invalid result for ${method}: ${outcome.reason === 'invalid' ? outcome.message : `not-in-era: ${method}`}`,
    ),
  );
}

/**
 * `error` with its message cut to OUTPUT_ISSUES_MAX_CHARS characters (mcp's `cutSaid`, as an output schema's issues are) when it is the
 * SDK's refusal of an upstream's result (InvalidResult); any other error as it is. The SDK words a refusal as its
 * zod error's text, pretty-printed JSON of every issue with every union branch's: ~3.3k characters for one text
 * block without `text` (16 bytes), so a 320 KB answer of such blocks made a 73.7 MB answer to the client (its
 * own stdio reader takes lines of at most 10 MiB). Cut the same way on every path (upstream-call.ts's failedCall,
 * upstream-client.ts's reads, and here): a message of one cut again is left as it is.
 */
export function boundedRefusal(error: unknown): unknown {
  if (!(error instanceof SdkError) || error.code !== SdkErrorCode.InvalidResult) return error;
  const message = error.message;
  if (message.length <= OUTPUT_ISSUES_MAX_CHARS) return error;
  return new SdkError(SdkErrorCode.InvalidResult, cutSaid(message, message.length), error.data);
}

/**
 * A 2025-era upstream's result (its `resultType` removed) as the SDK Client resolves it: {@link eraResult} with
 * the Client's 2025-era codec — the SDK path's own schema (`structuredContent` a record, `content` required beside
 * another result family's keys) and wording, where the SDK's neutral spec schema (`specTypeSchemas`) takes more
 * and words its issues otherwise.
 */
export function legacyResult(method: string, raw: unknown): unknown {
  return eraResult(LegacyCodec.get(), method, raw);
}

/**
 * Where the 2025-era codec is taken from: a Client's `_wireCodec()` before any 2026-07-28 revision is negotiated
 * is the SDK's one 2025-era codec, the one a 2025-era upstream's Client uses (taken once, on the first result that
 * is not plain; anything else fails closed).
 */
class LegacyCodec extends Client {
  static #codec: WireCodec | undefined;

  static get(): WireCodec {
    if (LegacyCodec.#codec !== undefined) return LegacyCodec.#codec;
    const codec = new LegacyCodec({ name: 'toolgate-legacy-codec', version: '0' })._wireCodec();
    if (codec.era !== '2025-11-25')
      throw new Error(`toolgate gateway: the SDK's first codec is ${codec.era}, not 2025-11-25`);
    return (LegacyCodec.#codec = codec);
  }
}
