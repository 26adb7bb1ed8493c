/**
 * `toolgate/gateway`: the production MCP gateway — many upstream servers (stdio or Streamable HTTP) under
 * namespaces behind one MCP server, the whole protocol forwarded and governed by one policy file, tool
 * definitions pinned, shadow rules recorded. Needs `@modelcontextprotocol/sdk`. This file is the
 * subpath's public surface: at most 20 names (test/core/surface.test.ts) — what one composes a gateway
 * with (createGateway and its options, the policy file's gateway section, the HTTP server and its bearer
 * authentication, the inbox, elicitation approvals, the audit sink). The parts it is built from (pins and
 * the lock file, upstream states, the audit record of each kind, request contexts) are internals: the CLI
 * and the tests import them from their modules. The URI normal form is `normalResourceUri` in
 * `toolgate/policy`, beside the rules it serves.
 */
export { createGateway, elicitationApprover } from './gateway.js';
export type { Gateway, GatewayOptions, GatewayReloadResult } from './gateway.js';
export type { GatewayUpstreamOptions } from './upstream.js';
export { serveGatewayHttp } from './http.js';
export type { GatewayHttpOptions, GatewayHttpServer } from './http.js';
export { jwtAuthenticator } from './auth.js';
export type { BearerAuthenticator, JwtAuthOptions } from './auth.js';
export type { GatewayApprovals } from './approvals.js';
export { gatewayInbox } from './inbox.js';
export type { GatewayInbox } from './inbox.js';
export { gatewayConfigOf } from './config.js';
export type { GatewayConfig } from './config.js';
export { jsonlAuditSink } from './audit.js';
export type { GatewayAuditRecord, GatewayAuditSink } from './audit.js';
