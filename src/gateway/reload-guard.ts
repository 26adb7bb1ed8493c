/**
 * The guarded reload (issue 26): every reload is diffed against the policy in force (`diffPolicies`). One
 * that widens access — a region newly allowed or asked, a limit raised, a rule or the whole policy put in
 * shadow mode, the fallback opened, pins relaxed, or a region that may change — is held: the policy in
 * force stays and the reload becomes an approval request (kind `reload`) in the inbox, a card showing the
 * diff with its example calls. Approved, it takes effect; denied or expired, it does not, and the audit
 * says why. A reload that does not widen takes effect at once.
 */
import { bindingOf, requestOf, type ApprovalRequest } from '../gate/index.js';
import {
  DIFF_CHANGE_KIND as KIND,
  diffPolicies,
  diffText,
  type DiffChange,
  type PolicyDiff,
} from '../policy-file/diff/index.js';
import type { PolicySet } from '../policy-file/policy-set.js';

/** How the gateway treats a reload that widens access. */
export interface GatewayReloadGuard {
  /** `hold` (the default with an inbox): wait for a person's approval in the inbox; `allow`: take effect (audited with the diff). */
  readonly widen: 'hold' | 'allow';
  /** How long a held reload waits for an answer. @default 86_400_000 (24 h) */
  readonly ttlMs?: number;
}

/** What the diff says about a reload. */
export interface ReloadVerdict {
  readonly diff: PolicyDiff;
  readonly widens: boolean;
  /** The widening parts, in words, each with its example call (for the audit and the card). */
  readonly why: readonly string[];
}

/** Diffs a reload against the policy in force. */
export async function reloadVerdict(current: PolicySet, next: PolicySet): Promise<ReloadVerdict> {
  const diff = await diffPolicies(current, next);
  const why = [
    ...diff.changes
      .filter((c) => c.direction === 'widen')
      .map(
        (c) =>
          `${c.kind} ${c.tool} ${JSON.stringify(c.example.arguments)}${c.example.who.agent ? ` (agent ${c.example.who.agent})` : ''}${c.example.who.tenant ? ` (tenant ${c.example.who.tenant})` : ''}: ${c.old.effect} → ${c.new.effect}${c.new.rule ? ` by rule ${JSON.stringify(c.new.rule)}` : ''}`,
      ),
    ...diff.uncertain
      .filter((u) => u.direction !== 'narrow')
      .map((u) => `may change: ${u.tool}: ${u.where} (${u.reason})`),
    ...diff.settings.filter((s) => s.direction === 'widen').map((s) => s.text),
  ];
  return { diff, widens: diff.widens, why };
}

/**
 * The approval request of a held reload: bound to the new policy's version (its `tool`) and the version in
 * force; shown as the diff, with its example calls, in the inbox.
 */
export function reloadRequest(
  secret: Uint8Array,
  current: PolicySet,
  next: PolicySet,
  verdict: ReloadVerdict,
  ttlMs?: number,
): ApprovalRequest {
  // One line per change, as the card shows it: what changed, the example call, and each side's verdict.
  const changes = verdict.diff.changes.map(changeLine);
  const uncertain = verdict.diff.uncertain.map((u) => `may change: ${u.tool}: ${u.where} (${u.reason})`);
  const binding = bindingOf({
    kind: 'reload',
    owner: { kind: 'session', id: 'gateway' },
    // No agent asked for it: a reload is the gateway's own (its card is shown as the agent `gateway`).
    agent: null,
    callId: `reload:${current.version}:${next.version}`,
    tool: next.version,
    args: { from: current.version, to: next.version },
    rule: 'reload-widens',
    policyVersion: current.version,
    caller: null,
    tenant: null,
    ...(ttlMs !== undefined ? { ttlMs } : {}),
  });
  return requestOf(secret, binding, {
    toolName: `policy reload ${current.version} → ${next.version}`,
    parameters: {
      from: current.file ?? current.version,
      to: next.file ?? next.version,
      widens: verdict.why,
      changes,
      ...(uncertain.length > 0 ? { 'may change': uncertain } : {}),
      ...(verdict.diff.settings.length > 0 ? { settings: verdict.diff.settings.map((s) => s.text) } : {}),
    },
    agent: 'gateway',
    runId: null,
    reason: `this reload widens access (${verdict.why.length} part${verdict.why.length === 1 ? '' : 's'}); it takes effect when approved`,
    trace: diffText(verdict.diff),
  });
}

function sideText(v: DiffChange['old']): string {
  return `${v.effect}${v.by === 'fallback' ? ' by the fallback' : v.rule ? ` by rule ${JSON.stringify(v.rule)}` : ` (${v.stage})`}`;
}

/** A change in one line: `newly allowed: bank:pay {"amount":75} (agent concierge) — was deny by rule "x", now allow by rule "y"`. */
function changeLine(c: DiffChange): string {
  const who = [
    ...(c.example.who.agent !== undefined ? [`agent ${c.example.who.agent}`] : []),
    ...(c.example.who.tenant !== undefined ? [`tenant ${c.example.who.tenant}`] : []),
    ...(c.example.who.scopes !== undefined ? [`scopes ${c.example.who.scopes.join(',')}`] : []),
  ];
  const call = `${c.example.tool} ${JSON.stringify(c.example.arguments)}${who.length > 0 ? ` (${who.join(', ')})` : ''}`;
  const sides = c.limit
    ? `limit ${JSON.stringify(c.limit.name)}: max ${c.limit.old?.max ?? 'not counted'} → ${c.limit.new?.max ?? 'not counted'}`
    : `was ${sideText(c.old)}, now ${sideText(c.new)}`;
  return `${KIND[c.kind]}: ${call} — ${sides}`;
}
