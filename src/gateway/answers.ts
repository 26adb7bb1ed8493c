/**
 * The gateway's `/approvals`: a person holding the approver scope lists and answers the gateway's pending
 * requests in the shared stores (`--approvals-postgres`). Who may see and answer a request is THE approver
 * check (src/gate/approvers.ts, the inbox's too): the policy in force's `approvals:` lists by tool and by
 * tenant, four eyes, and the gateway's tenant. A request the approver may not see does not exist for them:
 * it is not listed, and answering it is a 404 that says nothing about it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { ApproverIdentity, ApproverRules } from '../contracts/approval.js';
import { approverVerdict } from '../gate/index.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import { parseJsonText } from '../json-text.js';
import type { ApprovalStore, PendingRecord } from '../stores/types.js';
import { reply, sessionSubject } from './auth.js';

/** Who may answer the gateway's requests under the policy in force. */
export interface GatewayApprovers {
  /** The policy's `approvals:` lists and four eyes; null: anyone with the approver scope. */
  readonly rules: ApproverRules | null;
  /**
   * The tenants the gateway's approvers act for (its own tenant, or the approver token's with
   * --tenant-claim); `[null]`: the gateway serves no tenant, so only requests with no tenant are theirs.
   * Read by THE approver check as its tenant input, as the inbox's sessions are.
   */
  readonly tenants: readonly (string | null)[];
}

/** Options of the `/approvals` endpoint. */
export interface ApprovalsEndpoint {
  readonly store: ApprovalStore;
  /** The scope a token needs to list or answer. @default 'toolgate:approve' */
  readonly approverScope?: string;
  /**
   * Read per request, with the approver's token (a reload changes who may answer; with many tenants, the
   * token names the approver's tenant). @default anyone with the scope, requests with no tenant only
   */
  readonly approvers?: (auth: AuthInfo) => GatewayApprovers;
}

/** The approvers of a policy file's `approvals:` section for a gateway serving `tenant`. */
export function approversOf(set: PolicySet, tenant: string | null | undefined): GatewayApprovers {
  const section = set.data.approvals;
  const lists = section?.approvers;
  const rules: ApproverRules | null =
    section === undefined
      ? null
      : {
          ...(lists?.tenants ? { tenants: lists.tenants } : {}),
          ...(lists?.tools ? { tools: lists.tools } : {}),
          ...(section.fourEyes !== undefined ? { fourEyes: section.fourEyes } : {}),
        };
  return { rules, tenants: [typeof tenant === 'string' ? tenant : null] };
}

const MAX_BODY = 64 * 1024;

/** `GET /approvals` and `POST /approvals/<id>`, for an authenticated request. */
export async function answerApproval(
  req: IncomingMessage,
  res: ServerResponse,
  pathname: string,
  auth: AuthInfo,
  endpoint: ApprovalsEndpoint,
): Promise<void> {
  const scope = endpoint.approverScope ?? 'toolgate:approve';
  if (!auth.scopes.includes(scope))
    return reply(
      res,
      403,
      { error: 'insufficient_scope', error_description: `answering approvals needs the scope ${scope}` },
      `Bearer error="insufficient_scope", scope="${scope}"`,
    );
  const approvers = endpoint.approvers?.(auth) ?? { rules: null, tenants: [null] };
  // The gateway's tenant binds what its approvers see, through THE approver check's tenant input: a
  // gateway serving no tenant acts for `[null]`, the requests with none (a shared store holds other tenants' too).
  // Never unbound: `tenants: null` (this option's earlier spelling of "no tenant") means `[null]` too.
  const who: ApproverIdentity = { id: auth.clientId, tenants: approvers.tenants ?? [null] };
  const verdictOf = (r: PendingRecord) => approverVerdict(approvers.rules, who, r);
  // The gateway's own requests only: a store shared with the inbox (toolgate serve) holds a runner's or an
  // application's requests too, which the inbox answers. And only those this approver may see at all.
  const visible = (r: PendingRecord): boolean => {
    if (r.source !== 'gateway') return false;
    const verdict = verdictOf(r);
    return verdict.may || !verdict.hidden;
  };
  if (pathname === '/approvals') {
    if (req.method !== 'GET') return reply(res, 405, { error: 'method_not_allowed' });
    const pending = (await endpoint.store.list({ status: 'pending' })).filter(visible);
    return reply(res, 200, { pending });
  }
  if (req.method !== 'POST') return reply(res, 405, { error: 'method_not_allowed' });
  const id = decodeURIComponent(pathname.slice('/approvals/'.length));
  let text = '';
  for await (const chunk of req) {
    text += (chunk as Buffer).toString('utf8');
    if (text.length > MAX_BODY) return reply(res, 413, { error: 'too_large' });
  }
  let body: { effect?: unknown; reason?: unknown };
  try {
    body = parseJsonText(text) as typeof body;
  } catch {
    return reply(res, 400, {
      error: 'invalid_request',
      error_description: 'the body must be JSON: { "effect": "allow" | "deny", "reason"? }',
    });
  }
  if (
    (body.effect !== 'allow' && body.effect !== 'deny') ||
    (body.reason !== undefined && typeof body.reason !== 'string')
  )
    return reply(res, 400, {
      error: 'invalid_request',
      error_description: 'expected { "effect": "allow" | "deny", "reason"?: string }',
    });
  const record = await endpoint.store.get(id);
  const notFound = () =>
    reply(res, 404, { error: 'not_found', error_description: `no gateway approval request ${id}` });
  if (!record || record.source !== 'gateway') return notFound();
  // Checked before anything about the request is said: hidden is the same 404 as a request that does not exist.
  const verdict = verdictOf(record);
  if (!verdict.may && verdict.hidden) return notFound();
  if (!verdict.may) return reply(res, 403, { error: 'forbidden', error_description: verdict.reason });
  // Four eyes, always at the gateway: neither the subject the request is bound to nor a token with the
  // caller's client id answers it.
  const subject = sessionSubject(auth);
  if (record.binding.owner.id === subject || (record.caller !== null && record.caller === auth.clientId))
    return reply(res, 403, {
      error: 'forbidden',
      error_description: 'the caller of a request cannot answer it (four eyes)',
    });
  const answered = await endpoint.store.answer(id, {
    effect: body.effect,
    approver: auth.clientId,
    ...(typeof body.reason === 'string' ? { reason: body.reason } : {}),
  });
  if (!answered)
    return reply(res, 409, {
      error: 'conflict',
      error_description: `the request ${id} was already answered or has expired`,
    });
  return reply(res, 200, { id, answered: true, effect: body.effect });
}
