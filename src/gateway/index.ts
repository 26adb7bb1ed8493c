/**
 * `toolgate/gateway`: the production MCP gateway — many upstream servers (stdio or Streamable HTTP) under
 * namespaces behind one MCP server, the whole protocol forwarded and governed by one policy file, tool
 * definitions pinned, shadow rules recorded. Needs `@modelcontextprotocol/sdk`. This file is the
 * subpath's public surface.
 */
export { createGateway, elicitationApprover } from './gateway.js';
export type {
  Gateway,
  GatewayOptions,
  GatewayPinOptions,
  GatewayReloadOptions,
  GatewayReloadResult,
  GatewayRequestContext,
  GatewayRequestState,
} from './gateway.js';
export type { GatewayUpstreamOptions, Upstream, UpstreamState } from './upstream.js';
export { serveGatewayHttp } from './http.js';
export type { GatewayHttpOptions, GatewayHttpServer, GatewayEndpoint } from './http.js';
export { jwtAuthenticator } from './auth.js';
export type { BearerAuthenticator, JwtAuthOptions } from './auth.js';
export type { GatewayApprovals, ApprovalNote } from './approvals.js';
export { gatewayInbox } from './inbox.js';
export type { GatewayInbox } from './inbox.js';
export { gatewayConfigOf } from './config.js';
export type { GatewayConfig } from './config.js';
export { normalResourceUri } from '../policy-file/uri.js';
export type { NormalUri } from '../policy-file/uri.js';
export { PinStore, readLockFile, defaultLockFile, definitionDiff, pinnedDefinition } from './pins.js';
export type { LockFileData, LockEntry, PinnedDefinition, PinCheck } from './pins.js';
export { jsonlAuditSink } from './audit.js';
export type {
  GatewayAuditRecord,
  GatewayAuditSink,
  ToolAuditRecord,
  ItemAuditRecord,
  ModeAuditRecord,
  PinAuditRecord,
  UpstreamAuditRecord,
  ShadowRecord,
} from './audit.js';
