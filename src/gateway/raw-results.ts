/**
 * The shapes of an upstream's result that the SDKs' zod schemas give back unchanged (issue 25.2): a raw answer in
 * one of them is handed on as parsed, anything else is validated by the SDK's spec schema (upstream-raw.ts,
 * upstream-raw-modern.ts, fastpath.ts).
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  specTypeSchemas,
  type CallToolResult,
  type JsonSchemaValidator,
} from '@modelcontextprotocol/client';

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
 * A 2025-era `tools/call` answer's result as the SDK Client hands it on: validated by the SDK's spec schema
 * unless already in the form that validation returns unchanged, then its structured content checked against the
 * tool's output schema ({@link outputChecked}). Throws the SDK's errors.
 */
export function rawToolResult(
  raw: unknown,
  validator: JsonSchemaValidator<unknown> | undefined,
  name: string,
): CallToolResult {
  const result = plainCallToolResult(raw)
    ? (raw as CallToolResult)
    : (checked('tools/call', specTypeSchemas.CallToolResult['~standard'].validate(raw)) as CallToolResult);
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

/** The output of one of the SDK's spec schemas, or the SDK's InvalidResult error. */
export function checked(method: string, outcome: unknown): unknown {
  const result = outcome as { value?: unknown; issues?: readonly { message: string; path?: readonly unknown[] }[] };
  if (outcome instanceof Promise) throw new SdkError(SdkErrorCode.InvalidResult, `Invalid result for ${method}`);
  if (result.issues && result.issues.length > 0) {
    const error = result.issues
      .map((i) =>
        i.path?.length
          ? `${i.path.map((p) => String(typeof p === 'object' && p !== null ? (p as { key: unknown }).key : p)).join('.')}: ${i.message}`
          : i.message,
      )
      .join(', ');
    throw new SdkError(SdkErrorCode.InvalidResult, `Invalid result for ${method}: ${error}`);
  }
  return result.value;
}
