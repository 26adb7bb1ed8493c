/**
 * Every Decision is built here: one builder ({@link record}), field by field in one order, so all Decisions
 * share one object shape; and the texts of a refusal (its reason, and what the model is told). Only
 * src/gate/ builds Decisions (precheck.ts for steps 1–5, dispatch.ts and approval.ts after them).
 */
import type { GateContext, GateEnvironment } from '../contracts/gate.js';
import type { AllowDecision, Decision, DecisionBase, DenyDecision, DenyStage } from '../decision.js';
import type { RefusalLayer } from '../errors.js';
import type { NormalizedCall, UnreadableCall } from '../formats/index.js';
import { describe } from '../names.js';
import type { PermissionResult } from '../permissions/result.js';

type DenyParts = Pick<DenyDecision, 'stage' | 'by' | 'layer'>;

/** A Decision of a call being prechecked: its head from the call, the context and the registry. */
export function decisionOf(
  call: NormalizedCall | UnreadableCall,
  form: string,
  agent: string,
  context: GateContext,
  env: GateEnvironment,
  parameters: DecisionBase['parameters'],
  rule: DecisionBase['rule'],
  reason: string,
  effect: Decision['effect'],
  stage: Decision['stage'],
  by: Decision['by'],
  layer: Decision['layer'],
): Decision {
  return record(
    call.id,
    call.name,
    form,
    agent,
    context.tenant?.id ?? null,
    context.runId ?? null,
    parameters,
    rule,
    reason,
    null,
    env.policy?.version ?? null,
    effect,
    stage,
    by,
    layer,
  );
}

// THE Decision builder: every Decision is built here, field by field in one order, so all Decisions share one
// object shape (spreading bases of many shapes made the object-clone path megamorphic, and a decision cost
// microseconds instead of nanoseconds, issue 6), one object per call, frozen.
function record(
  callId: string,
  tool: string,
  canonical: string,
  agent: string,
  tenant: string | null,
  runId: string | null,
  parameters: DecisionBase['parameters'],
  rule: DecisionBase['rule'],
  reason: string,
  asked: DecisionBase['asked'],
  policyVersion: string | null,
  effect: Decision['effect'],
  stage: Decision['stage'],
  by: Decision['by'],
  layer: Decision['layer'],
): Decision {
  return Object.freeze({
    callId,
    tool,
    canonical,
    agent,
    tenant,
    runId,
    parameters,
    rule,
    reason,
    asked,
    policyVersion,
    effect,
    stage,
    by,
    layer,
  }) as Decision;
}

/** A Decision made from another's base (a refusal after the fact, an answered ask): its fields, this verdict. */
function from(
  base: DecisionBase,
  reason: string,
  effect: Decision['effect'],
  stage: Decision['stage'],
  by: Decision['by'],
  layer: Decision['layer'],
): Decision {
  return record(
    base.callId,
    base.tool,
    base.canonical,
    base.agent,
    base.tenant,
    base.runId,
    base.parameters,
    base.rule,
    reason,
    base.asked,
    base.policyVersion,
    effect,
    stage,
    by,
    layer,
  );
}

export function deny(base: DecisionBase, parts: DenyParts, reason: string): DenyDecision {
  return from(base, reason, 'deny', parts.stage, parts.by, parts.layer) as DenyDecision;
}

export function allow(base: DecisionBase, by: AllowDecision['by'], reason: string): AllowDecision {
  return from(base, reason, 'allow', 'policy', by, null) as AllowDecision;
}

const LAYER_NAMES: Record<RefusalLayer, string> = {
  not_declared: 'the agent does not declare it',
  tenant: "the tenant's plan does not include it",
  caller: "the caller's scopes do not cover it",
};

export function refusalText(tool: string, agent: string, layer: RefusalLayer): string {
  return `tool ${quote(tool)} is not permitted for agent ${quote(agent)}: ${LAYER_NAMES[layer]} (layer: ${layer})`;
}

// A refusal's reason is shown to the model: a hostile call must not get a megabyte name, or a hundred
// thousand schema issues, echoed back into the context. The Decision keeps the name as asked.
const MAX_ISSUES = 10;

// Refusal texts quote the call's name and the agent's on every refused call: the quoted form of a name
// is kept (JSON.stringify per refusal was a tenth of a refused decision's time, issue 12). Names of at most
// 256 characters, at most 1,024 of them; a full cache is dropped whole, like the canonical cache.
const QUOTED_LIMIT = 1024;
let quoted = new Map<string, string>();

export function quote(name: string): string {
  let text = quoted.get(name);
  if (text === undefined) {
    text = describe(name);
    if (name.length <= 256) {
      if (quoted.size >= QUOTED_LIMIT) quoted = new Map();
      quoted.set(name, text);
    }
  }
  return text;
}

export function issueText(issues: readonly string[]): string {
  const shown = issues.slice(0, MAX_ISSUES).map((issue) => (issue.length > 200 ? `${issue.slice(0, 197)}...` : issue));
  const more = issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : '';
  return `${shown.join('; ')}${more}`;
}

/** The end of a final refusal: the model may not have the call, and must not ask again. */
const FINAL = 'This decision is final and cannot be appealed; do not retry it.';

/**
 * What the model may do after a refusal, by stage: the one table of the refusal texts' endings. A call the
 * model got wrong can be corrected; a limit's own text says when (or whether) it may be retried, so a
 * "final" after it contradicted it; a store that could not answer refused a call nothing judged.
 */
const AFTER: Readonly<Record<DenyStage, string>> = Object.freeze({
  // "rejected": the reason says what was wrong with the call, which the model may correct.
  lookup: '',
  arguments: '',
  validation: '',
  allowlist: FINAL,
  policy: FINAL,
  handler: FINAL,
  budget: FINAL,
  depth: FINAL,
  limit: '',
  store:
    'It did not run, and no limit refused it: the store its limits count in could not be used; it may be tried again later.',
});

/**
 * The rule and the reason of a Decision in one phrase, said once: a rule without a `reason` of its own has
 * the reason `rule "name"`, and "(rule "x"): rule "x"" said the name twice (issue 22).
 */
export function ruleAndReason(decision: Pick<DecisionBase, 'rule' | 'reason'>): string {
  if (decision.rule === null) return `: ${decision.reason}`;
  const rule = `rule ${JSON.stringify(decision.rule)}`;
  return decision.reason === rule ? ` (${rule})` : ` (${rule}): ${decision.reason}`;
}

/** The text a model gets for a refused call: what was refused and why, and what it may do instead. */
export function refusalContent(decision: DenyDecision): string {
  // A call the model got wrong (unknown name, bad arguments) can be corrected; a permission refusal cannot.
  if (decision.stage === 'lookup' || decision.stage === 'arguments' || decision.stage === 'validation') {
    return `Tool call rejected: ${decision.reason}.`;
  }
  const after = AFTER[decision.stage];
  const tail = after === '' ? '' : ` ${after}`;
  const head =
    decision.stage === 'allowlist'
      ? ` (layer ${decision.layer}): ${decision.reason}`
      : // A limit's or a store's refusal keeps the rule that allowed the call: it is not the refusing one.
        (decision.stage === 'policy' || decision.stage === 'handler') && decision.rule
        ? ruleAndReason(decision)
        : ` (${decision.stage}): ${decision.reason}`;
  return `Tool call refused${head}${endsSentence(head) ? '' : '.'}${tail}`;
}

function endsSentence(text: string): boolean {
  return /[.!?]$/.test(text);
}

export function fallbackText(result: PermissionResult): string {
  return result === 'allow'
    ? "no rule matched; the policy's fallback is allow"
    : result === 'deny'
      ? "no rule matched; the policy's fallback is deny"
      : "no rule matched; the policy's fallback is ask";
}
