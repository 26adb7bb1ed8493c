/**
 * toolgate/inbox: the approval inbox (a Hono app with its Node adapter), its store interface and the
 * sources that feed it (paused AgentRunner runs, the registry's handler route).
 */
export { createInbox, Inbox } from './server.js';
export type { InboxOptions, InboxServer, ApproverPolicy, InboxAuditRecord, SubmittedApproval } from './server.js';
export { RunnerInbox, inboxHandler } from './sources.js';
export type { RunnerInboxOptions, TrackedRun, InboxHandlerOptions } from './sources.js';
export { jwtApprover } from './auth.js';
export type { ApproverAuthenticator, JwtApproverOptions } from './auth.js';
export { SIGNATURE_HEADER, webhookSignature, slackMessage } from './notify.js';
export type { InboxWebhook, WebhookPayload, WebhookEvent, DeliveryReport } from './notify.js';
