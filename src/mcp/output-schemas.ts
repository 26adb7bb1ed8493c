/**
 * How toolgate's MCP clients check an upstream's `structuredContent` against its tool's `outputSchema`: by the
 * gate's own schema compiler (src/schema.ts), not the SDK's default Ajv. An upstream writes both the schema and
 * the content, and the SDK's Ajv matches a `pattern` with a backtracking RegExp: a malicious upstream's
 * `{"pattern":"^(a+)+$"}` and a content of 28 crafted characters held the gateway's event loop for seconds, every
 * tenant's calls with it. Here a pattern is matched in linear time (schema-regexp.ts), a schema is read in its
 * declared dialect (schema-dialects.ts), and an `$async` schema, whose answer would come later, fails the check.
 */
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/client';
import { compileValidator, type JsonSchema } from '../schema.js';

/** The output schema validator of every client toolgate builds (`clientOptions`) and of the gateway's raw path. */
export const outputSchemaValidator: jsonSchemaValidator = {
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const validate = compileValidator(schema as JsonSchema);
    return (input) => {
      const result = validate(input as Record<string, unknown>);
      if (result instanceof Promise) {
        result.catch(() => undefined);
        return { valid: false, data: undefined, errorMessage: 'an output schema with $async: true is not checked' };
      }
      if (result.ok) return { valid: true, data: input as T, errorMessage: undefined };
      return { valid: false, data: undefined, errorMessage: result.issues.join('; ') };
    };
  },
};
