/**
 * toolgate/inbox: the approval inbox (a Hono app with its Node adapter), its audit log, and the sources
 * that feed it (paused AgentRunner runs, the registry's handler route). Everything comes from the façade,
 * `inbox.ts`.
 */
export {
  createInbox,
  Inbox,
  RunnerInbox,
  inboxHandler,
  jwtApprover,
  openInboxAudit,
  SIGNATURE_HEADER,
  webhookSignature,
  slackMessage,
} from './inbox.js';
export type {
  InboxOptions,
  InboxServer,
  ApproverPolicy,
  InboxAuditRecord,
  InboxAuditEntry,
  InboxAuditLog,
  InboxAuditStore,
  InboxReminders,
  LinkRequest,
  SubmittedApproval,
  RecordOutcome,
  CardOptions,
  CardRisk,
  Risk,
  ToolCard,
  RunnerInboxOptions,
  TrackedRun,
  InboxHandlerOptions,
  ApproverAuthenticator,
  JwtApproverOptions,
  InboxWebhook,
  WebhookPayload,
  WebhookEvent,
  DeliveryReport,
} from './inbox.js';
