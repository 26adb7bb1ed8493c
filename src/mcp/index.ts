/**
 * The MCP client of toolgate, both eras (2026-07-28 and 2025-11-25), on the MCP SDK v2: used by
 * `toolgate/mcp` (tools of MCP servers in a ToolRegistry) and by the gateway towards its upstreams. This
 * file is the only one of src/mcp/ that others import.
 */
export { connectMcpServer, connectUpstreamServer, annotationTags, contentText, McpToolError } from './tools.js';
export type { McpServerOptions, McpConnection } from './tools.js';
export { connectClient, newClient, clientOptions, assertClient, priorOf, ToolIndexStore } from './client.js';
export { listBounded, MAX_LIST_ITEMS, MAX_LIST_PAGES } from './listing.js';
export type { McpSession, ConnectClientOptions } from './client.js';
export { cutSaid, OUTPUT_ISSUES_MAX_CHARS, outputSchemaValidator } from './output-schemas.js';
export {
  eraViolationMessage,
  MODERN_VERSION,
  LEGACY_VERSION,
  ERA_VIOLATION_CODE,
  TASKS_EXTENSION,
  TASK_STATUSES,
  upstreamTaskOf,
  declaresTasks,
} from './era.js';
export type { McpEra, EraViolation, McpEraViolationListener, UpstreamTask } from './era.js';
export { openTransport, tapTransport } from './transport.js';
export type { McpEndpoint, McpStdioServer, InboundTap } from './transport.js';
