/**
 * THE approver check (src/gate/approvers.ts): who may see and who may answer a stored request, by tenant,
 * by tool, four eyes and the approver's own tenants. The inbox and the gateway call this one function.
 */
import { describe, expect, it } from 'vitest';
import type { ApproverIdentity, ApproverRules } from '../../src/contracts/approval.js';
import { approverVerdict, checkApproverRules, type ApproverSubject } from '../../src/gate/approvers.js';

const acmeRefund: ApproverSubject = { tenant: 'acme', canonical: 'refund', caller: 'cy' };
const acmeSearch: ApproverSubject = { tenant: 'acme', canonical: 'search', caller: 'cy' };
const globexRefund: ApproverSubject = { tenant: 'globex', canonical: 'refund', caller: 'gil' };
const noTenant: ApproverSubject = { tenant: null, canonical: 'refund', caller: null };

const anyone = (id: string): ApproverIdentity => ({ id, tenants: null });

describe('approverVerdict', () => {
  it('without rules, anyone authenticated may answer; an identity bound to tenants sees only theirs', () => {
    expect(approverVerdict(null, anyone('ana'), acmeRefund)).toEqual({ may: true });
    expect(approverVerdict(undefined, anyone('ana'), noTenant)).toEqual({ may: true });
    const gus = { id: 'gus@globex.example', tenants: ['globex'] };
    expect(approverVerdict(null, gus, globexRefund)).toEqual({ may: true });
    expect(approverVerdict(null, gus, acmeRefund)).toEqual({ may: false, hidden: true });
    // A request without a tenant is nobody's tenant: hidden from an approver bound to tenants.
    expect(approverVerdict(null, gus, noTenant)).toEqual({ may: false, hidden: true });
    expect(approverVerdict(null, { id: 'x', tenants: [] }, acmeRefund)).toEqual({ may: false, hidden: true });
  });

  it('a gateway serving no tenant binds its approvers to [null]: requests with no tenant only', () => {
    const gateway = { id: 'ops', tenants: [null] };
    expect(approverVerdict(null, gateway, noTenant)).toEqual({ may: true });
    expect(approverVerdict(null, gateway, acmeRefund)).toEqual({ may: false, hidden: true });
    expect(approverVerdict(null, gateway, globexRefund)).toEqual({ may: false, hidden: true });
    // The lists still apply to the requests it may see.
    const rules: ApproverRules = { tools: { refund: ['fin'] } };
    expect(approverVerdict(rules, gateway, noTenant)).toEqual({ may: false, hidden: true });
    expect(approverVerdict(rules, { id: 'fin', tenants: [null] }, noTenant)).toEqual({ may: true });
    // With a tenant of its own too, both kinds are held.
    expect(approverVerdict(null, { id: 'ops', tenants: [null, 'acme'] }, acmeRefund)).toEqual({ may: true });
  });

  it('every list that applies must name the approver: the tool list and the tenant list (or *)', () => {
    const rules: ApproverRules = {
      tenants: { acme: ['ana@acme.example', 'fin@acme.example'], '*': ['ops@example.com'] },
      tools: { Refund: ['fin@acme.example'] },
    };
    expect(approverVerdict(rules, anyone('fin@acme.example'), acmeRefund)).toEqual({ may: true });
    // Named for the tenant but not the tool, or for neither: the request does not exist for them.
    expect(approverVerdict(rules, anyone('ana@acme.example'), acmeRefund)).toEqual({ may: false, hidden: true });
    expect(approverVerdict(rules, anyone('ops@example.com'), acmeRefund)).toEqual({ may: false, hidden: true });
    // No tool list for search: the tenant's alone.
    expect(approverVerdict(rules, anyone('ana@acme.example'), acmeSearch)).toEqual({ may: true });
    // globex has no list of its own: '*' and the tool list, and nobody is on both.
    expect(approverVerdict(rules, anyone('ops@example.com'), globexRefund)).toEqual({ may: false, hidden: true });
    expect(approverVerdict(rules, anyone('fin@acme.example'), globexRefund)).toEqual({ may: false, hidden: true });
  });

  it('with lists of which none applies, nobody may answer', () => {
    const rules: ApproverRules = { tenants: { acme: ['ana'] } };
    expect(approverVerdict(rules, anyone('ana'), globexRefund)).toEqual({ may: false, hidden: true });
  });

  it('compares names in canonical form (NFKC, case-folded), tool names too', () => {
    const rules: ApproverRules = { tools: { ＲＥＦＵＮＤ: ['Ana@ACME.example'] } };
    expect(approverVerdict(rules, anyone('ana@acme.example'), acmeRefund)).toEqual({ may: true });
    expect(approverVerdict(rules, anyone('ＡＮＡ@acme.example'), acmeRefund)).toEqual({ may: true });
  });

  it('four eyes: the requester sees their request but may not answer it', () => {
    const rules: ApproverRules = { tenants: { acme: ['ana', 'cy'] }, fourEyes: true };
    expect(approverVerdict(rules, anyone('CY'), acmeRefund)).toEqual({
      may: false,
      hidden: false,
      reason: 'four eyes: nobody answers a request they made themselves',
    });
    expect(approverVerdict({ fourEyes: true }, anyone('cy'), acmeRefund)).toMatchObject({ may: false, hidden: false });
    expect(approverVerdict({ fourEyes: true }, anyone('ana'), acmeRefund)).toEqual({ may: true });
    // Not named, but the requester: visible (they made it), never answerable.
    expect(approverVerdict({ tenants: { acme: ['ana'] } }, anyone('cy'), acmeRefund)).toEqual({
      may: false,
      hidden: false,
      reason: 'cy is not an approver of this request',
    });
    // The requester of another tenant, bound to their own tenant: hidden.
    expect(approverVerdict({ fourEyes: true }, { id: 'cy', tenants: ['globex'] }, acmeRefund)).toEqual({
      may: false,
      hidden: true,
    });
  });

  it('fails closed on malformed rules or identity, and checkApproverRules names what is wrong', () => {
    const bad = { tenants: { acme: 'ana' } } as unknown as ApproverRules;
    expect(approverVerdict(bad, anyone('ana'), acmeRefund)).toEqual({ may: false, hidden: true });
    expect(() => checkApproverRules(bad, 'createInbox option "approvers"')).toThrow(
      /createInbox option "approvers"\.tenants\["acme"\] must be a list of approver names/,
    );
    expect(() => checkApproverRules({ fourEyes: 'yes' } as unknown as ApproverRules)).toThrow(
      /approvers\.fourEyes must be a boolean/,
    );
    expect(approverVerdict(null, anyone(''), acmeRefund)).toEqual({ may: false, hidden: true });
    expect(approverVerdict(null, { id: 'ana', tenants: 'acme' } as unknown as ApproverIdentity, acmeRefund)).toEqual({
      may: false,
      hidden: true,
    });
  });
});
