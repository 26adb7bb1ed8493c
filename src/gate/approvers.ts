/**
 * THE approver check: who may see and who may answer a stored approval request. One function, called
 * before anything about a request is shown, listed, streamed, refused or changed — by the inbox (its list,
 * `/events`, `/fragment`, `/edit`, link pages, the answer) and by the gateway's `/approvals` alike — so
 * "who may answer" means the same on every surface.
 *
 *   the approver's tenants ──▶ the policy's lists (by tool AND by tenant, `*` for tenants without one)
 *                          ──▶ four eyes (nobody answers a request they made)
 *
 * A request of a tenant the approver does not act for, or one no list that applies names them for, is
 * `hidden`: it does not exist for them (404), and nothing about it — not even that it was answered, or by
 * whom — is said. The requester may see their own request (they made it) but not answer it.
 */
import type { ApprovalRecord, ApproverIdentity, ApproverRules, ApproverVerdict } from '../contracts/approval.js';
import { canonical, describe } from '../names.js';

/** What the check reads of a request: its tenant, its canonical tool, and who asked. */
export type ApproverSubject = Pick<ApprovalRecord, 'tenant' | 'canonical' | 'caller'>;

interface Compiled {
  /** Approvers by tenant (`*` included), as canonical names; null: no tenant lists. */
  readonly tenants: ReadonlyMap<string, ReadonlySet<string>> | null;
  /** Approvers by canonical tool name, as canonical names; null: no tool lists. */
  readonly tools: ReadonlyMap<string, ReadonlySet<string>> | null;
  readonly fourEyes: boolean;
}

const OPEN: Compiled = { tenants: null, tools: null, fourEyes: false };
// Compiled once per rules object (the inbox's and the gateway's rules live as long as their policy).
const compiled = new WeakMap<ApproverRules, Compiled>();

const HIDDEN: ApproverVerdict = Object.freeze({ may: false, hidden: true });
const MAY: ApproverVerdict = Object.freeze({ may: true });
const FOUR_EYES = 'four eyes: nobody answers a request they made themselves';

function lists(value: unknown, where: string): ReadonlyMap<string, ReadonlySet<string>> | null {
  if (value === undefined) return null;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new TypeError(`${where} must be an object of approver lists, got ${describe(value)}`);
  const out = new Map<string, Set<string>>();
  for (const [key, names] of Object.entries(value as Record<string, unknown>)) {
    if (!Array.isArray(names) || names.some((n) => typeof n !== 'string' || n.trim() === ''))
      throw new TypeError(`${where}[${JSON.stringify(key)}] must be a list of approver names, got ${describe(names)}`);
    const set = out.get(key) ?? new Set<string>();
    for (const name of names as string[]) set.add(canonical(name));
    out.set(key, set);
  }
  return out;
}

function compile(rules: ApproverRules, where: string): Compiled {
  if (typeof rules !== 'object' || rules === null || Array.isArray(rules))
    throw new TypeError(`${where} must be an object ({ tenants?, tools?, fourEyes? }), got ${describe(rules)}`);
  const fourEyes = rules.fourEyes ?? false;
  if (typeof fourEyes !== 'boolean')
    throw new TypeError(`${where}.fourEyes must be a boolean, got ${describe(rules.fourEyes)}`);
  const tenants = lists(rules.tenants, `${where}.tenants`);
  const byTool = lists(rules.tools, `${where}.tools`);
  // Tool lists are keyed by canonical name, whatever spelling the policy file used (`Refund`, `ｒｅｆｕｎｄ`).
  let tools: Map<string, Set<string>> | null = null;
  if (byTool) {
    tools = new Map();
    for (const [tool, names] of byTool) {
      const key = canonical(tool);
      tools.set(key, new Set([...(tools.get(key) ?? []), ...names]));
    }
  }
  return { tenants, tools, fourEyes };
}

/**
 * Checks approver rules (the policy file's `approvals:` section, `createInbox`'s `approvers`); throws a
 * TypeError naming what is wrong. `where` names the option in the message.
 */
export function checkApproverRules(rules: ApproverRules, where = 'approvers'): void {
  compiled.set(rules, compile(rules, where));
}

function rulesOf(rules: ApproverRules | null | undefined): Compiled {
  if (rules === null || rules === undefined) return OPEN;
  let found = compiled.get(rules);
  if (found === undefined) {
    found = compile(rules, 'approvers');
    compiled.set(rules, found);
  }
  return found;
}

/**
 * May `who` see and answer `request` under `rules`? `{ may: true }`; `{ may: false, hidden: true }`: the
 * request does not exist for them (answer 404, list nothing, stream nothing, refuse without details);
 * `{ may: false, hidden: false, reason }`: they may see it but not answer it (403 with `reason`).
 *
 * - `who.tenants` (not null) must hold the request's tenant — a request without a tenant is hidden from an
 *   approver bound to tenants unless the list holds `null` (a gateway serving no tenant: `[null]`);
 * - with lists, every list that applies — the tool's (by canonical name) and the tenant's (`*` for a tenant
 *   without its own) — must name `who.id`; with lists of which none applies, nobody may answer. Names
 *   compare in canonical form (NFKC, case-folded);
 * - the requester (`request.caller`) may see their own request but answers it only when neither four eyes
 *   nor a list forbids it;
 * - without rules (null), anyone authenticated may answer (the tenant binding still holds).
 *
 * Malformed rules or identity fail closed (hidden).
 *
 * @example
 * const verdict = approverVerdict(rules, { id: 'ana@acme.example', tenants: ['acme'] }, record);
 * if (!verdict.may && verdict.hidden) return notFound();      // nothing about it is said
 * if (!verdict.may) return forbidden(verdict.reason);
 */
export function approverVerdict(
  rules: ApproverRules | null | undefined,
  who: ApproverIdentity,
  request: ApproverSubject,
): ApproverVerdict {
  let policy: Compiled;
  try {
    policy = rulesOf(rules);
  } catch {
    return HIDDEN;
  }
  if (typeof who?.id !== 'string' || who.id.trim() === '') return HIDDEN;
  const tenants = who.tenants;
  // A request without a tenant is held only by a `null` entry (a gateway serving no tenant).
  if (tenants !== null && (!Array.isArray(tenants) || !tenants.includes(request.tenant))) return HIDDEN;
  const me = canonical(who.id);
  const isCaller = typeof request.caller === 'string' && canonical(request.caller) === me;
  if (policy.tenants !== null || policy.tools !== null) {
    const applying: ReadonlySet<string>[] = [];
    const byTool = policy.tools?.get(canonical(request.canonical));
    if (byTool) applying.push(byTool);
    const byTenant =
      (request.tenant !== null ? policy.tenants?.get(request.tenant) : undefined) ?? policy.tenants?.get('*');
    if (byTenant) applying.push(byTenant);
    const named = applying.length > 0 && applying.every((list) => list.has(me));
    if (!named) {
      if (!isCaller) return HIDDEN;
      return {
        may: false,
        hidden: false,
        reason: policy.fourEyes ? FOUR_EYES : `${who.id} is not an approver of this request`,
      };
    }
  }
  if (policy.fourEyes && isCaller) return { may: false, hidden: false, reason: FOUR_EYES };
  return MAY;
}
