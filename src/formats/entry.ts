/**
 * `toolgate/formats`: the shapes tool calls come in and results go out in — OpenAI chat, OpenAI
 * responses, Anthropic and Gemini, and toolgate's own — and the tool schemas a model is shown. Types
 * only: the registry reads and writes these shapes itself. This file is the subpath's public surface.
 */
export type {
  CallFormat,
  SchemaFormat,
  ToolCallInput,
  ToolgateCall,
  OpenAIChatToolCall,
  OpenAIResponsesFunctionCall,
  AnthropicToolUse,
  GeminiFunctionCallPart,
  ShapedToolResult,
  OpenAIChatToolResult,
  OpenAIResponsesFunctionCallOutput,
  AnthropicToolResult,
  GeminiFunctionResponsePart,
  ToolSchema,
} from './index.js';
