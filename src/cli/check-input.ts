/**
 * What one input of `toolgate check` holds: one call, or a whole assistant message whose calls are
 * decided one by one. A message is an OpenAI chat message (`tool_calls`), an Anthropic message or content
 * array (`tool_use` blocks), a Gemini content or parts array (`functionCall` parts) or a Responses
 * response or output array (`function_call` items). Text and reasoning are skipped; anything else in a
 * message that is not a call toolgate can decide (a server-side tool, a custom tool call, an unknown
 * item) is refused, never skipped silently.
 */
import { describe } from '../names.js';

/** One item of a message: a call to decide, or why it is refused. */
export type MessageItem =
  { readonly call: unknown; readonly problem?: never } | { readonly problem: string; readonly call?: never };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Content that is not a call: Anthropic text/thinking/media blocks; Responses messages, their text and reasoning.
const NOT_CALLS = new Set([
  'text',
  'thinking',
  'redacted_thinking',
  'image',
  'document',
  'message',
  'reasoning',
  'output_text',
  'refusal',
]);
// Gemini part fields that carry no call.
const GEMINI_CONTENT = ['text', 'thought', 'thoughtSignature', 'inlineData', 'fileData'];

/**
 * The items of `value` when it is a message (or a content / parts / output array), else null: then it
 * is one call.
 */
export function messageItems(value: unknown): MessageItem[] | null {
  if (Array.isArray(value)) return value.flatMap(item);
  if (!isRecord(value)) return null;
  // A message whose call or content field has a shape no provider sends is refused whole, never read as
  // "no calls" (a call could hide in it).
  for (const key of ['tool_calls', 'parts', 'output'] as const) {
    if (key in value && value[key] !== null && !Array.isArray(value[key]))
      return [{ problem: `"${key}" must be an array, got ${describe(value[key])}` }];
  }
  if (Array.isArray(value['tool_calls'])) {
    // OpenAI chat: every entry is a call (a custom-tool entry is unreadable and so refused).
    const calls: MessageItem[] = value['tool_calls'].map((call: unknown) => ({ call }));
    const legacy = value['function_call'];
    if (isRecord(legacy)) calls.push({ call: { name: legacy['name'], arguments: legacy['arguments'] } });
    return calls;
  }
  if (isRecord(value['function_call']) && value['role'] === 'assistant') {
    const legacy = value['function_call'];
    return [{ call: { name: legacy['name'], arguments: legacy['arguments'] } }];
  }
  if (Array.isArray(value['content']) && (value['role'] === 'assistant' || value['type'] === 'message'))
    return value['content'].flatMap(item);
  if (Array.isArray(value['parts'])) return value['parts'].flatMap(item);
  if (Array.isArray(value['output'])) return value['output'].flatMap(item);
  if (value['role'] === 'assistant' || value['role'] === 'model') {
    // A message without calls: text content only.
    const content = value['content'];
    if (content === undefined || content === null || typeof content === 'string') return [];
    return [{ problem: `"content" must be text or an array, got ${describe(content)}` }];
  }
  return null;
}

function item(entry: unknown): MessageItem[] {
  if (!isRecord(entry)) return [{ problem: `a message item must be an object, got ${describe(entry)}` }];
  const type = entry['type'];
  if (type === 'function' || type === 'function_call' || type === 'tool_use' || isRecord(entry['functionCall']))
    return [{ call: entry }];
  if (typeof type === 'string') {
    if (NOT_CALLS.has(type)) return [];
    return [{ problem: `a message item of type ${JSON.stringify(type)} is not a call toolgate decides` }];
  }
  if (GEMINI_CONTENT.some((k) => Object.hasOwn(entry, k))) return [];
  return [
    {
      problem: `a message item with keys ${Object.keys(entry)
        .map((k) => JSON.stringify(k))
        .join(', ')} is neither a call nor text`,
    },
  ];
}
