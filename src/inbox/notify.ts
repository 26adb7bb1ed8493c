/**
 * Webhooks per tenant: a generic JSON payload or a Slack-compatible message (with approve / deny links),
 * signed with HMAC-SHA256 over `<timestamp>.<body>` and retried with backoff.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { describe } from '../names.js';
import { plain } from './render.js';
import type { PendingRecord } from '../stores/types.js';

/** One webhook. */
export interface InboxWebhook {
  /** Where to POST. */
  readonly url: string;
  /** The HMAC key of the signature header (at least 16 bytes). */
  readonly secret: string | Uint8Array;
  /** A generic JSON payload, or a Slack-compatible message (`text` + `blocks`). @default 'json' */
  readonly format?: 'json' | 'slack';
  /** Who the approve / deny links in the message are made for (the approver they answer as). @default `webhook:<tenant>` */
  readonly approver?: string;
}

/** What a webhook is told: a new request, an answer (or time-out), a reminder before a request expires. */
export type WebhookEvent = 'approval.requested' | 'approval.answered' | 'approval.reminder';

/** The generic JSON payload. */
export interface WebhookPayload {
  readonly type: WebhookEvent;
  readonly id: string;
  /** Epoch ms. */
  readonly sentAt: number;
  readonly approval: {
    readonly id: string;
    readonly source: string;
    readonly tool: string;
    readonly canonical: string;
    readonly parameters: Readonly<Record<string, unknown>>;
    readonly agent: string;
    readonly tenant: string | null;
    readonly caller: string | null;
    readonly runId: string | null;
    readonly rule: string;
    readonly reason: string;
    readonly expiresAt: number;
    readonly status: string;
    readonly answer: {
      readonly effect: string;
      readonly approver: string | null;
      readonly reason: string | null;
    } | null;
  };
  /** Signed single-use links (with `approval.requested` and `approval.reminder`). */
  readonly links: { readonly open: string; readonly approve: string; readonly deny: string } | null;
}

/** The signature header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. */
export const SIGNATURE_HEADER = 'x-toolgate-signature';

/** Computes the signature header value for `body` at `timestamp` (unix seconds). */
export function webhookSignature(secret: string | Uint8Array, timestamp: number, body: string): string {
  const key = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret;
  return `t=${timestamp},v1=${createHmac('sha256', key).update(`${timestamp}.${body}`).digest('hex')}`;
}

export function payloadOf(
  type: WebhookEvent,
  record: PendingRecord,
  links: WebhookPayload['links'],
  now: number,
): WebhookPayload {
  return {
    type,
    id: randomUUID(),
    sentAt: now,
    approval: {
      id: record.id,
      source: record.source,
      tool: record.toolName,
      canonical: record.canonical,
      parameters: record.parameters,
      agent: record.agent,
      tenant: record.tenant,
      caller: record.caller,
      runId: record.runId,
      rule: record.rule,
      reason: record.reason,
      expiresAt: record.expiresAt,
      status: record.status,
      answer: record.answer
        ? {
            effect: record.answer.effect,
            approver: record.answer.approver ?? null,
            reason: record.answer.reason ?? null,
          }
        : null,
    },
    links,
  };
}

function slackEscape(value: string): string {
  return plain(value).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The Slack-compatible message (incoming-webhook `text` + Block Kit `blocks`, link buttons). */
export function slackMessage(payload: WebhookPayload): Record<string, unknown> {
  const a = payload.approval;
  // A backtick in the arguments could close the code block and format the rest as part of the message.
  const args = slackEscape(JSON.stringify(a.parameters, null, 2) ?? '').replace(/`/g, 'ˋ');
  const who = [`agent *${slackEscape(a.agent)}*`];
  if (a.tenant !== null) who.push(`tenant *${slackEscape(a.tenant)}*`);
  if (a.caller !== null) who.push(`caller *${slackEscape(a.caller)}*`);
  if (payload.type === 'approval.answered') {
    const text = `${slackEscape(a.tool)}: ${a.answer?.effect === 'allow' ? 'approved' : 'denied'}${a.answer?.approver ? ` by ${slackEscape(a.answer.approver)}` : ''}`;
    return { text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }] };
  }
  const reminder = payload.type === 'approval.reminder';
  const lead = reminder
    ? `Reminder, expires ${new Date(a.expiresAt).toISOString().replace('T', ' ').slice(0, 16)} UTC`
    : 'Approval needed';
  const text = `${lead}: ${slackEscape(a.tool)} (${slackEscape(a.reason)})`;
  const blocks: Record<string, unknown>[] = [
    {
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: `*${lead}:* \`${slackEscape(a.tool)}\`\n${who.join(', ')}\nrule *${slackEscape(a.rule)}*: ${slackEscape(a.reason)}\n\`\`\`${args}\`\`\``,
      },
    },
  ];
  if (payload.links) {
    blocks.push({
      type: 'actions',
      elements: [
        {
          type: 'button',
          text: { type: 'plain_text', text: 'Approve' },
          style: 'primary',
          url: payload.links.approve,
          action_id: 'approve',
        },
        {
          type: 'button',
          text: { type: 'plain_text', text: 'Deny' },
          style: 'danger',
          url: payload.links.deny,
          action_id: 'deny',
        },
        {
          type: 'button',
          text: { type: 'plain_text', text: 'Open the inbox' },
          url: payload.links.open,
          action_id: 'open',
        },
      ],
    });
  }
  return { text, blocks };
}

/** How a delivery ended. */
export interface DeliveryReport {
  readonly url: string;
  readonly ok: boolean;
  readonly attempts: number;
  /** The last HTTP status, or null after a network error. */
  readonly status: number | null;
  readonly error: string | null;
}

/**
 * POSTs `payload` to the webhook, signed, retrying a network error, a 408, a 429 or a 5xx after each of
 * `delaysMs` (default 1 s, 5 s, 30 s, 2 min). Never throws.
 */
export async function deliver(
  hook: InboxWebhook,
  payload: WebhookPayload,
  options: { readonly delaysMs?: readonly number[]; readonly timeoutMs?: number; readonly now?: () => number } = {},
): Promise<DeliveryReport> {
  const body = JSON.stringify(hook.format === 'slack' ? slackMessage(payload) : payload);
  const delays = options.delaysMs ?? [1000, 5000, 30_000, 120_000];
  const now = options.now ?? Date.now;
  let status: number | null = null;
  let error: string | null = null;
  for (let attempt = 1; ; attempt++) {
    const timestamp = Math.floor(now() / 1000);
    try {
      const response = await fetch(hook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'toolgate-inbox',
          [SIGNATURE_HEADER]: webhookSignature(hook.secret, timestamp, body),
          'x-toolgate-event': payload.type,
          'x-toolgate-delivery': payload.id,
        },
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      });
      status = response.status;
      error = null;
      await response.body?.cancel();
      if (response.ok) return { url: hook.url, ok: true, attempts: attempt, status, error };
      if (status !== 408 && status !== 429 && status < 500)
        return { url: hook.url, ok: false, attempts: attempt, status, error: `HTTP ${status}` };
    } catch (e) {
      status = null;
      error = e instanceof Error ? e.message : describe(e);
    }
    const delay = delays[attempt - 1];
    if (delay === undefined)
      return { url: hook.url, ok: false, attempts: attempt, status, error: error ?? `HTTP ${String(status)}` };
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
