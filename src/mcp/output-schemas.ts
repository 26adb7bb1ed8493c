/**
 * How toolgate's MCP clients check an upstream's `structuredContent` against its tool's `outputSchema`: by the
 * gate's own schema compiler (src/schema.ts), not the SDK's default Ajv. An upstream writes both the schema and
 * the content, and the SDK's Ajv matches a `pattern` with a backtracking RegExp: a malicious upstream's
 * `{"pattern":"^(a+)+$"}` and a content of 28 crafted characters held the gateway's event loop for seconds, every
 * tenant's calls with it. Here a pattern is matched in linear time (schema-regexp.ts), a schema is read in its
 * declared dialect (schema-dialects.ts), and an `$async` schema, whose answer would come later, fails the check.
 * The refusal's text is cut at {@link OUTPUT_ISSUES_MAX_CHARS} ({@link issuesText}): the upstream writes the schema
 * too, and every issue is reported with its path and the schema's words — 100 required names of 200 characters
 * made an answer of 200 empty objects (681 bytes) a 4.8 MB refusal to the client, on the SDK path as on the raw one.
 */
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/client';
import { compileValidator, type JsonSchema } from '../schema.js';

/** The output schema validator of every client toolgate builds (`clientOptions`) and of the gateway's raw path. */
export const outputSchemaValidator: jsonSchemaValidator = {
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const validate = compileValidator(schema as JsonSchema);
    // Ajv's check of a schema with a truthy root `$async` is a promise: it fails here, so it is not run (run unawaited,
    // an upstream's schema and content made the gateway do a whole check's work for nothing: atk-async-await-weight).
    if ((schema as { $async?: unknown }).$async)
      return () => ({ valid: false, data: undefined, errorMessage: ASYNC_NOT_CHECKED });
    return (input) => {
      const result = validate(input as Record<string, unknown>);
      if (result instanceof Promise) {
        result.catch(() => undefined);
        return { valid: false, data: undefined, errorMessage: ASYNC_NOT_CHECKED };
      }
      if (result.ok) return { valid: true, data: input as T, errorMessage: undefined };
      return { valid: false, data: undefined, errorMessage: issuesText(result.issues) };
    };
  },
};

const ASYNC_NOT_CHECKED = 'an output schema with $async: true is not checked';

/** The most characters of an output-schema refusal's issues that are said (every refusal of an upstream's result: raw-results.ts's boundedRefusal too). */
export const OUTPUT_ISSUES_MAX_CHARS = 16_384;

/**
 * The issues joined by `; `, cut at {@link OUTPUT_ISSUES_MAX_CHARS} characters with the cut said within them
 * (as raw-results.ts's boundedRefusal says it): the whole text is never made, only its length counted.
 */
export function issuesText(issues: readonly string[]): string {
  let total = issues.length > 0 ? 2 * (issues.length - 1) : 0;
  for (const issue of issues) total += issue.length;
  if (total <= OUTPUT_ISSUES_MAX_CHARS) return issues.join('; ');
  let text = '';
  for (const issue of issues) {
    text += text === '' ? issue : `; ${issue}`;
    if (text.length >= OUTPUT_ISSUES_MAX_CHARS) break;
  }
  return cutSaid(text, total);
}

/**
 * The first characters of `text` (whose whole length is `total`) and the cut said, {@link OUTPUT_ISSUES_MAX_CHARS}
 * characters in all: how every refusal of an upstream's result is cut (here and raw-results.ts's boundedRefusal).
 */
export function cutSaid(text: string, total: number): string {
  const note = ` … (cut: ${total} characters)`;
  return text.slice(0, OUTPUT_ISSUES_MAX_CHARS - note.length) + note;
}
