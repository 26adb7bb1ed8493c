/**
 * Resources and prompts through the gate: a resource read, subscription or template completion is a call
 * of the gate-level tool `resource` (`{ namespace, uri, action }`, the URI in normal form), a prompt get or
 * completion a call of `prompt` (`{ namespace, name, action, arguments }`), each dispatched on the gateway's
 * route like a tool call — the `resources:` / `prompts:` rules of the policy in force decide (policy-file/
 * items.ts), an ask goes to the gateway's person (elicitation, the stores, the inbox), the Decision is
 * audited — and, allowed, the call's execution forwards the decided arguments upstream: what is decided is
 * what the upstream is sent.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { readCall } from '../formats/index.js';
import { dispatchCalls, ruleAndReason, gatewayCall, type Route } from '../gate/index.js';
import type { GateContext } from '../contracts/gate.js';
import { canonical } from '../names.js';
import { itemTool, type ItemAction, type ItemKind } from '../policy-file/items.js';
import { normalResourceUri } from '../policy-file/uri.js';
import { ToolRegistry, type ToolResult } from '../registry.js';
import type { ApprovalNote } from './approvals.js';
import { gatewayRoute, type AskingRequest, type GatewayPeople } from './approvers.js';
import { auditTime, shadowOf, type GatewayAuditRecord, type ItemAuditRecord } from './audit.js';
import type { PolicyInForce } from './policy.js';
import { extensibleCopy } from './copies.js';
import type { Upstream } from './upstream.js';

/** One resource or prompt access to decide and, allowed, forward. */
export interface ItemAccess<T> {
  readonly kind: ItemKind;
  readonly action: ItemAction;
  readonly upstream: Upstream;
  /** The gate-level call's arguments (namespace and action included). */
  readonly args: Readonly<Record<string, unknown>>;
  /** What the audit and the refusal name: the URI in normal form, the template, the prompt as shown. */
  readonly target: string;
  /** Sends the decided arguments upstream (only called for an allowed call). */
  readonly forward: (args: Readonly<Record<string, unknown>>) => Promise<T>;
}

/** Who asks, as the gate sees them (no allowlist layers: those apply to tools only). */
export interface ItemAsker extends AskingRequest {
  readonly session: string | null;
}

/** The gate resources and prompts are decided through: one registry per kind, each holding its one tool. */
export class ItemGate {
  readonly #registries: Readonly<Record<ItemKind, ToolRegistry>>;
  /** The forwarding of the call being executed, by call id (the gate-level tool's execute runs it). */
  readonly #forwards = new Map<string, (args: Record<string, unknown>) => Promise<unknown>>();
  readonly #people: GatewayPeople;
  readonly #audit: (record: GatewayAuditRecord) => void;

  constructor(
    options: { readonly toolTimeoutMs: number; readonly handlerTimeoutMs: number },
    people: GatewayPeople,
    audit: (record: GatewayAuditRecord) => void,
  ) {
    const registry = (kind: ItemKind): ToolRegistry => {
      const r = new ToolRegistry(options);
      r.register(
        itemTool(kind, (args, execution) => {
          const forward = this.#forwards.get(execution.callId);
          if (!forward) throw new Error(`toolgate gateway: no ${kind} request is waiting for call ${execution.callId}`);
          return forward(args);
        }),
      );
      return r;
    };
    this.#registries = { resource: registry('resource'), prompt: registry('prompt') };
    this.#people = people;
    this.#audit = audit;
  }

  /** Puts the policy in force's resource and prompt rules in force (one synchronous step of the swap). */
  enforce(inForce: PolicyInForce): void {
    this.#registries.resource.setPermissionPolicy(inForce.set.resources.policy);
    this.#registries.prompt.setPermissionPolicy(inForce.set.prompts.policy);
  }

  /**
   * Decides `access` through the gate under the policy in force and, allowed, forwards it; resolves with the
   * upstream's result, or rejects with the refusal (InvalidRequest), the upstream's own error, or why the
   * call failed.
   */
  async run<T>(access: ItemAccess<T>, asker: ItemAsker, inForce: () => PolicyInForce): Promise<T> {
    const { kind, upstream } = access;
    const registry = this.#registries[kind];
    const callId = `mcp-${kind}-${randomUUID()}`;
    let upstreamError: { error: unknown } | undefined;
    this.#forwards.set(callId, async (args) => {
      // Decided for this upstream: arguments edited by an approver to name another are not sent anywhere.
      if (args['namespace'] !== canonical(upstream.namespace))
        throw new Error(
          `the approved ${kind} call names upstream ${JSON.stringify(args['namespace'])}, not "${upstream.namespace}"`,
        );
      try {
        return await access.forward(args);
      } catch (error) {
        upstreamError = { error };
        throw error;
      }
    });
    let approval: ApprovalNote | undefined;
    const started = inForce();
    const person = gatewayRoute(this.#people, registry, asker, (n) => (approval = n), kind);
    // An approval names its kind and what it is about: the URI in normal form, or the prompt's canonical name.
    const target = kind === 'resource' ? String(access.args['uri']) : canonical(String(access.args['name']));
    let route: Route = person;
    if (person.person) {
      // As `{ ...approvals, kind, target }`, without V8's slow path for keys added to a spread's copy (copies.ts).
      const approvals = extensibleCopy(person.person.approvals);
      approvals.kind = kind;
      approvals.target = target;
      route = { ...person, person: { ...person.person, approvals } };
    }
    // Allowed and run, the access is answered with the upstream's own result (`value`): its text is never read.
    // Its optional parts set on it, not spread from conditional objects (a slow define per read; issue 25.2).
    const given: { -readonly [K in keyof GateContext]: GateContext[K] } = { signal: asker.signal };
    if (asker.agent !== null) given.agent = asker.agent;
    if (asker.tenant !== null) given.tenant = { id: asker.tenant };
    if (asker.caller !== null) given.caller = { id: asker.caller };
    const context: GateContext = gatewayCall(given);
    let result: ToolResult;
    try {
      const call = readCall({ id: callId, name: kind, arguments: access.args });
      [result] = (await dispatchCalls([call], context, registry, route)) as [ToolResult];
    } finally {
      this.#forwards.delete(callId);
    }
    const decision = result.decision;
    const latest = inForce();
    const rules = (decision.policyVersion === latest.set.version ? latest : started).set[
      kind === 'resource' ? 'resources' : 'prompts'
    ];
    const shadow = shadowOf(rules.policy, rules.shadow, registry, decision);
    const record: { -readonly [K in keyof ItemAuditRecord]: ItemAuditRecord[K] } = {
      type: kind,
      action: access.action,
      time: auditTime(),
      caller: asker.caller,
      session: asker.session,
      upstream: upstream.namespace,
      target: access.target,
      effect: decision.effect,
      asked: decision.asked !== null,
      rule: decision.rule,
      reason: decision.reason,
      decision,
      status: result.status,
    };
    // Set last, in this order, as the conditional spreads they replace put them.
    if (approval) record.approval = approval;
    if (shadow) record.shadow = shadow;
    this.#audit(record);
    if (result.status === 'ok') return result.value as T;
    if (result.status === 'error') {
      if (upstreamError) throw upstreamError.error;
      throw new McpError(
        ErrorCode.InternalError,
        `toolgate gateway: the ${kind} ${JSON.stringify(access.target)} failed: ${result.content}`,
      );
    }
    if (approval && (approval.state === 'asked' || approval.state === 'pending'))
      throw new McpError(
        ErrorCode.InvalidRequest,
        `toolgate: the ${kind} ${JSON.stringify(access.target)} waits for a person's approval${ruleAndReason(decision)}`,
      );
    throw new McpError(
      ErrorCode.InvalidRequest,
      `toolgate: the ${kind} ${JSON.stringify(access.target)} is refused by the policy${ruleAndReason(decision)}`,
    );
  }
}

/** A list request's cursor: lists are returned whole, so a cursor is an InvalidParams error. */
export function noCursor(cursor: unknown): void {
  if (cursor !== undefined)
    throw new McpError(
      ErrorCode.InvalidParams,
      'toolgate gateway: lists are returned whole, in one page; there is no next page',
    );
}

/** A resource URI in normal form, or the InvalidParams error saying why it cannot be judged. */
export function normalUri(uri: unknown): string {
  const normal = normalResourceUri(uri);
  if (!normal.ok) throw new McpError(ErrorCode.InvalidParams, `toolgate: ${normal.problem}`);
  return normal.uri;
}
