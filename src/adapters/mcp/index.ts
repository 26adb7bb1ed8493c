/**
 * `toolgate/mcp`: tools from MCP servers of either era (2026-07-28, 2025-11-25) registered in a
 * ToolRegistry (so they pass the gate), and the MCP gateway with one upstream server (`createMcpProxy`,
 * the gateway of `toolgate/gateway` under another name). Needs `@modelcontextprotocol/client` 2.x (and,
 * for the proxy, `@modelcontextprotocol/sdk` 1.x until the gateway serves its clients on the SDK v2).
 */
export { connectMcpServer, annotationTags, contentText, McpToolError } from '../../mcp/index.js';
export type {
  McpServerOptions,
  McpStdioServer,
  McpConnection,
  McpSession,
  McpEra,
  EraViolation,
  McpEraViolationListener,
} from '../../mcp/index.js';
export { createMcpProxy, serveMcpProxyHttp } from '../../gateway/proxy.js';
export type {
  McpProxy,
  McpProxyOptions,
  McpUpstream,
  McpAuditRecord,
  McpRequestContext,
  McpRequestInfo,
  McpServerContextOptions,
  McpProxyHttpOptions,
  McpProxyHttpServer,
} from '../../gateway/proxy.js';
export { jwtAuthenticator } from '../../gateway/auth.js';
export type { BearerAuthenticator, JwtAuthOptions } from '../../gateway/auth.js';
export { loadPolicyForProxy, policyToolMetadata, policyToolParameters } from '../../gateway/policy.js';
