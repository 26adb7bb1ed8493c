/**
 * `toolgate/mcp`: tools from MCP servers registered in a ToolRegistry (so they pass the gate), and a
 * policy-enforcing MCP gateway in front of an upstream server. Needs `@modelcontextprotocol/sdk`.
 */
export { connectMcpServer, annotationTags, contentText, McpToolError } from './client.js';
export type { McpServerOptions, McpStdioServer, McpConnection } from './client.js';
export { createMcpProxy } from './proxy.js';
export type {
  McpProxy,
  McpProxyOptions,
  McpUpstream,
  McpAuditRecord,
  McpRequestContext,
  McpRequestInfo,
  McpServerContextOptions,
} from './proxy.js';
export { serveMcpProxyHttp, jwtAuthenticator } from './proxy-http.js';
export type { McpProxyHttpOptions, McpProxyHttpServer, BearerAuthenticator, JwtAuthOptions } from './proxy-http.js';
export { loadPolicyForProxy, policyToolMetadata, policyToolParameters } from './proxy-policy.js';
