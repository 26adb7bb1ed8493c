/**
 * Tool calls in, results out, in the shapes of OpenAI chat, OpenAI responses, Anthropic and Gemini,
 * plus toolgate's own `{ id?, name, arguments }`. A result takes the shape of its call.
 */
import { describe } from '../names.js';
import type { JsonSchema } from '../schema.js';
import { parseJsonText } from '../json-text.js';
import type { Tool } from '../tool.js';

/** The call shapes understood. */
export type CallFormat = 'openai-chat' | 'openai-responses' | 'anthropic' | 'gemini' | 'toolgate';
/** The schema formats `registry.schemas()` can produce. */
export type SchemaFormat = Exclude<CallFormat, 'toolgate'>;

export interface OpenAIChatToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}
export interface OpenAIResponsesFunctionCall {
  readonly type: 'function_call';
  readonly call_id: string;
  readonly name: string;
  readonly arguments: string;
  readonly id?: string;
}
export interface AnthropicToolUse {
  readonly type: 'tool_use';
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}
export interface GeminiFunctionCallPart {
  readonly functionCall: { readonly name: string; readonly args?: unknown; readonly id?: string };
}
/** toolgate's own call shape; `arguments` may be an object or a JSON string. */
export interface ToolgateCall {
  readonly id?: string;
  readonly name: string;
  readonly arguments?: unknown;
}
/** Any call shape `executeToolCalls` accepts. */
export type ToolCallInput =
  OpenAIChatToolCall | OpenAIResponsesFunctionCall | AnthropicToolUse | GeminiFunctionCallPart | ToolgateCall;

export interface OpenAIChatToolResult {
  readonly role: 'tool';
  readonly tool_call_id: string;
  readonly content: string;
}
export interface OpenAIResponsesFunctionCallOutput {
  readonly type: 'function_call_output';
  readonly call_id: string;
  readonly output: string;
}
export interface AnthropicToolResult {
  readonly type: 'tool_result';
  readonly tool_use_id: string;
  readonly content: string;
  readonly is_error?: true;
}
export interface GeminiFunctionResponsePart {
  readonly functionResponse: {
    readonly name: string;
    readonly id?: string;
    readonly response: { readonly output: unknown } | { readonly error: string };
  };
}

/** A call in one normal form, whatever shape it came in. `arguments` is still raw (a JSON string or a value). */
export interface NormalizedCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: unknown;
  readonly format: CallFormat;
}

/** A call that could not be read at all (not one of the shapes): the reason, to refuse it with. */
export interface UnreadableCall {
  readonly id: string;
  readonly name: string;
  readonly format: CallFormat;
  readonly problem: string;
}

// `call_` and the count in base 36: its last digit from a table, `call_` and the digits before it made once per 36
// ids (a radix conversion per call was a tenth of the cost of reading a call; a second concatenation, issue 25). The
// count is kept as its last digit and the digits before it (no division and remainder per call).
const DIGITS36 = '0123456789abcdefghijklmnopqrstuvwxyz';
let lowDigit = 0;
let highCount = 0;
let highPrefix = 'call_';
function nextId(): string {
  if (++lowDigit === 36) {
    lowDigit = 0;
    highPrefix = `call_${(++highCount).toString(36)}`;
  }
  return highPrefix + DIGITS36[lowDigit]!;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): value is string {
  return typeof value === 'string';
}

/** Reads a call of any supported shape. Never throws: a call that matches no shape is returned as unreadable. */
export function readCall(raw: unknown): NormalizedCall | UnreadableCall {
  if (!isRecord(raw))
    return {
      id: nextId(),
      name: '',
      format: 'toolgate',
      problem: `a tool call must be an object, got ${describe(raw)}`,
    };
  const fn = raw['function'];
  if (raw['type'] === 'function' && isRecord(fn)) {
    const id = str(raw['id']) ? raw['id'] : nextId();
    if (!str(fn['name']))
      return {
        id,
        name: '',
        format: 'openai-chat',
        problem: 'an OpenAI chat tool call needs function.name as a string',
      };
    // `arguments` is required by the API: an absent one is refused, not read as {} (parseArguments).
    return { id, name: fn['name'], arguments: fn['arguments'], format: 'openai-chat' };
  }
  if (raw['type'] === 'function_call') {
    const id = str(raw['call_id']) ? raw['call_id'] : nextId();
    if (!str(raw['name']))
      return {
        id,
        name: '',
        format: 'openai-responses',
        problem: 'an OpenAI responses function_call needs name as a string',
      };
    return { id, name: raw['name'], arguments: raw['arguments'], format: 'openai-responses' };
  }
  if (raw['type'] === 'tool_use') {
    const id = str(raw['id']) ? raw['id'] : nextId();
    if (!str(raw['name']))
      return { id, name: '', format: 'anthropic', problem: 'an Anthropic tool_use block needs name as a string' };
    return { id, name: raw['name'], arguments: raw['input'], format: 'anthropic' };
  }
  const fc = raw['functionCall'];
  if (isRecord(fc)) {
    const id = str(fc['id']) ? fc['id'] : nextId();
    if (!str(fc['name']))
      return { id, name: '', format: 'gemini', problem: 'a Gemini functionCall needs name as a string' };
    // `args` is optional in Gemini's FunctionCall: absent means no arguments.
    return { id, name: fc['name'], arguments: fc['args'] ?? {}, format: 'gemini' };
  }
  return ownCall(str(raw['id']) ? raw['id'] : nextId(), raw['name'], raw['arguments']);
}

const UNRECOGNISED =
  'unrecognised tool call shape; expected an OpenAI chat tool call, an OpenAI responses function_call, an Anthropic tool_use, ' +
  'a Gemini functionCall part, or { name, arguments }';

/** `readCall({ name, arguments })` without the object around them (`invoke`'s call): the same call, the same id. */
export function readNamedCall(name: unknown, args: unknown): NormalizedCall | UnreadableCall {
  return ownCall(nextId(), name, args);
}

function ownCall(id: string, name: unknown, args: unknown): NormalizedCall | UnreadableCall {
  if (!str(name)) return { id, name: '', format: 'toolgate', problem: UNRECOGNISED };
  return { id, name, arguments: args === undefined ? {} : args, format: 'toolgate' };
}

/**
 * Parses raw arguments: a JSON string or a value, which must be an object. Never guesses: bad input is a
 * problem string. An empty or blank string is refused like any other text that is not a JSON object: no
 * provider documents `""` as "no arguments" (OpenAI's `arguments` and the Responses API's are JSON text,
 * Anthropic's `input` and Gemini's `args` are objects), so a tool without parameters is called with `{}`.
 * Absent (or null) arguments are refused too; `readCall` reads an absent field as `{}` only in the shapes
 * whose specification makes it optional (Gemini's `args`, toolgate's own `arguments`).
 */
export function parseArguments(
  raw: unknown,
): { ok: true; value: Record<string, unknown> } | { ok: false; problem: string } {
  let value = raw;
  if (raw === undefined || raw === null)
    return {
      ok: false,
      problem: 'the call has no arguments; expected a JSON object (send {} for a tool without parameters)',
    };
  if (typeof raw === 'string') {
    try {
      value = parseJsonText(raw);
    } catch (error) {
      // Blank text is never JSON: asked only of text that did not parse (a trim per call cost as much as a look-up).
      if (raw.trim() === '')
        return {
          ok: false,
          problem: `the arguments are ${raw === '' ? 'an empty string' : 'blank'}; expected a JSON object (send {} for a tool without parameters)`,
        };
      return {
        ok: false,
        problem: `the arguments are not valid JSON (${(error as Error).message}); expected a JSON object`,
      };
    }
  }
  if (!isRecord(value)) return { ok: false, problem: `the arguments must be a JSON object, got ${describe(value)}` };
  return { ok: true, value };
}

/** A result to be shaped like its call. */
export interface ResultPayload {
  readonly callId: string;
  readonly tool: string;
  readonly isError: boolean;
  readonly content: string;
  readonly value?: unknown;
}

/** Shapes a result like the call it answers. */
export function formatResult(format: CallFormat, result: ResultPayload): ShapedToolResult | null {
  switch (format) {
    case 'openai-chat':
      return { role: 'tool', tool_call_id: result.callId, content: result.content };
    case 'openai-responses':
      return { type: 'function_call_output', call_id: result.callId, output: result.content };
    case 'anthropic':
      return result.isError
        ? { type: 'tool_result', tool_use_id: result.callId, content: result.content, is_error: true }
        : { type: 'tool_result', tool_use_id: result.callId, content: result.content };
    case 'gemini':
      return {
        functionResponse: {
          name: result.tool,
          id: result.callId,
          response: result.isError
            ? { error: result.content }
            : { output: result.value === undefined ? result.content : result.value },
        },
      };
    case 'toolgate':
      return null;
  }
}

/** A result in one of the provider shapes. */
export type ShapedToolResult =
  OpenAIChatToolResult | OpenAIResponsesFunctionCallOutput | AnthropicToolResult | GeminiFunctionResponsePart;

/** One tool's schema in a provider's shape. */
export type ToolSchema =
  | {
      readonly type: 'function';
      readonly function: { readonly name: string; readonly description: string; readonly parameters: JsonSchema };
    }
  | {
      readonly type: 'function';
      readonly name: string;
      readonly description: string;
      readonly parameters: JsonSchema;
      readonly strict: false;
    }
  | { readonly name: string; readonly description: string; readonly input_schema: JsonSchema }
  | { readonly name: string; readonly description: string; readonly parameters: JsonSchema };

export const SCHEMA_FORMATS: readonly SchemaFormat[] = ['openai-chat', 'openai-responses', 'anthropic', 'gemini'];

export function toolSchema(format: SchemaFormat, tool: Tool): ToolSchema {
  switch (format) {
    case 'openai-chat':
      return {
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
      };
    case 'openai-responses':
      return {
        type: 'function',
        name: tool.name,
        description: tool.description,
        parameters: tool.inputSchema,
        strict: false,
      };
    case 'anthropic':
      return { name: tool.name, description: tool.description, input_schema: tool.inputSchema };
    case 'gemini':
      return { name: tool.name, description: tool.description, parameters: tool.inputSchema };
  }
}
