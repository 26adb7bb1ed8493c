/**
 * Resource reads, subscriptions, prompt gets and completions decided by the policy in force's
 * `resources:` and `prompts:` rules; an ask goes to the person behind the client by elicitation.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { displaySafe } from '../names.js';
import { askByElicitation } from './approvers.js';
import type { ItemPolicy, ItemVerdict } from './governance.js';
import type { GatewayAuditRecord } from './audit.js';
import type { PolicyInForce } from './reload.js';
import type { Upstream } from './upstream.js';

/** Who asks for an item, and where its decision goes. */
export interface ItemRequest {
  readonly server: Server;
  readonly approvalTimeoutMs: number;
  /** The policy in force now (read again after an ask: a reload may have come in). */
  readonly current: () => PolicyInForce;
  readonly audit: (record: GatewayAuditRecord) => void;
  readonly caller: string | null;
  readonly session: string | null;
}

/** Decides a resource or prompt access under `inForce`; asks by elicitation; refuses with an McpError. */
export async function govern(
  asker: ItemRequest,
  inForce: PolicyInForce,
  kind: 'resource' | 'prompt',
  action: 'read' | 'subscribe' | 'get' | 'complete',
  upstream: Upstream,
  key: string,
  target: string,
  args: Readonly<Record<string, unknown>>,
): Promise<void> {
  const policyOf = (p: PolicyInForce): ItemPolicy => (kind === 'resource' ? p.resources : p.prompts);
  let verdict: ItemVerdict = policyOf(inForce).decide(upstream.namespace, key, args, action === 'complete');
  let effect: 'allow' | 'deny' = verdict.effect === 'allow' ? 'allow' : 'deny';
  let reason = verdict.reason;
  if (verdict.effect === 'ask') {
    const answer = await askByElicitation(
      asker.server,
      `Allow ${action === 'get' ? 'getting the prompt' : action === 'complete' ? 'completing for' : `${action === 'read' ? 'reading' : 'subscribing to'} the resource`} ${displaySafe(target)}${Object.keys(args).length > 0 ? ` with ${displaySafe(JSON.stringify(args))}` : ''}? Rule ${displaySafe(JSON.stringify(verdict.rule))} asks for approval: ${displaySafe(verdict.reason)}`,
      asker.approvalTimeoutMs,
    );
    effect = answer ? 'allow' : 'deny';
    if (!answer) reason = `${verdict.reason} (not approved)`;
    // Reloaded while the person was asked: an approval stands only if the new policy allows, or still asks
    // under the rule the person was shown (as for tool calls); another rule's ask was not answered.
    const latest = asker.current();
    if (answer && latest !== inForce) {
      const asked = verdict.rule;
      // Decided as it was asked: a completion knows only some arguments (a rule needing another refuses).
      verdict = policyOf(latest).decide(upstream.namespace, key, args, action === 'complete');
      effect = verdict.effect === 'allow' || (verdict.effect === 'ask' && verdict.rule === asked) ? 'allow' : 'deny';
      reason =
        effect === 'deny' && verdict.effect === 'ask'
          ? `${verdict.reason} (the policy was reloaded while a person was asked under rule ${JSON.stringify(asked)}; ask again)`
          : verdict.reason;
    }
  }
  asker.audit({
    type: kind,
    action,
    time: new Date().toISOString(),
    caller: asker.caller,
    session: asker.session,
    upstream: upstream.namespace,
    target,
    effect,
    asked: verdict.effect === 'ask',
    rule: verdict.rule,
    reason,
    ...(verdict.shadow ? { shadow: verdict.shadow } : {}),
  });
  if (effect === 'deny')
    throw new McpError(
      ErrorCode.InvalidRequest,
      `toolgate: the ${kind} ${JSON.stringify(target)} is refused by the policy${verdict.rule ? ` (rule ${JSON.stringify(verdict.rule)})` : ''}: ${reason}`,
    );
}
