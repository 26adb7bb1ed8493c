/**
 * `toolgate/mcp`: tools from MCP servers registered in a ToolRegistry (so they pass the gate), and the MCP
 * gateway with one upstream server (`createMcpProxy`, the gateway of `toolgate/gateway` under another
 * name). Needs `@modelcontextprotocol/sdk`.
 */
export { connectMcpServer, annotationTags, contentText, McpToolError } from './client.js';
export type { McpServerOptions, McpStdioServer, McpConnection } from './client.js';
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
