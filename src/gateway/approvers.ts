/**
 * Who answers the gateway's asks, as the person of a call's Route: the approval inbox (the call waits for
 * a person there), the shared approval stores (refused now, answered on any replica, run once on the
 * retry), or the person behind the client by MCP elicitation. One of them per gateway; with none, an ask
 * is decided by the registry's handler or its fallback (deny).
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ApprovalKind } from '../contracts/approval.js';
import type { ApprovalSettings, AskOutcome, Route } from '../gate/index.js';
import { displaySafe } from '../names.js';
import type { PermissionHandler, PermissionRequest } from '../permissions/handler.js';
import type { ToolRegistry } from '../registry.js';
import { storePerson, type ApprovalNote, type GatewayApprovals } from './approvals.js';
import { inboxRoute, type GatewayInbox } from './inbox.js';
import { APPROVAL_FORM, inRound, roundOf, type MrtrStores } from './mrtr.js';

/** Where the gateway's asks go. */
export interface GatewayPeople {
  readonly approvals: GatewayApprovals | undefined;
  readonly inbox: GatewayInbox | undefined;
  /** The key approval requests are bound under (the route's owner's). */
  readonly secret: Uint8Array;
  /** The owner's secret and the shared stores of 2026-07-28 requestStates, when set (mrtr.ts). */
  readonly requestState: MrtrStores | undefined;
  /** How long a person has to answer by elicitation. */
  readonly approvalTimeoutMs: number;
}

/** The one MCP request a call's person is asked for, and who made it. */
export interface AskingRequest {
  readonly server: Server;
  readonly signal: AbortSignal;
  readonly progressToken: string | number | undefined;
  readonly sendProgress: (message: string) => Promise<void>;
  readonly caller: string | null;
  /** The authenticated subject the approval is bound to (issuer, claim, value), or null. */
  readonly subject: string | null;
  /** The agent the request's context names (the route's), or null when it names none (`boundAgentOf`). */
  readonly agent: string | null;
  readonly tenant: string | null;
  readonly policyVersion: string | null;
}

/**
 * The route a gateway call is dispatched on: named `gateway`, calls one at a time, its person the inbox,
 * the stores or elicitation. `note` hears what the inbox or the stores did (the audit's `approval`);
 * `pin` is the called tool's definition hash (`definitionPin`), bound into every approval asked for it;
 * `refresh` the route's context in force now (a call decided again after a wait).
 */
export function gatewayRoute(
  people: GatewayPeople,
  registry: ToolRegistry,
  request: AskingRequest,
  note: (n: ApprovalNote) => void,
  kind: ApprovalKind = 'tool',
  pin: string | null = null,
  refresh?: Route['refresh'],
): Route {
  return withRefresh(personRoute(people, registry, request, note, kind, pin), refresh);
}

/**
 * The route just made with `refresh` set on it when given (a property added to the fresh object: a spread of
 * it into another, per call, took V8's slow define path, ~2.7 % of a gateway call; issue 25.2).
 */
function withRefresh(route: Route, refresh: Route['refresh']): Route {
  if (refresh) (route as { refresh?: Route['refresh'] }).refresh = refresh;
  return route;
}

/** {@link gatewayRoute}'s route before its `refresh`. */
function personRoute(
  people: GatewayPeople,
  registry: ToolRegistry,
  request: AskingRequest,
  note: (n: ApprovalNote) => void,
  kind: ApprovalKind,
  pin: string | null,
): Route {
  // `pin`: the hash of the whole tool definition the call is made against; an approval bound to it does not
  // count for the call once the definition changes (an accepted drift), on any of the routes below.
  const approvals = { secret: people.secret, pin };
  // A 2026-07-28 request asks in its own round (mrtr.ts): the inbox's page by URL elicitation, else a form.
  // The round itself is made only when the call asks (issue 25).
  const round = inRound(request.server);
  if (people.inbox && !round) return inboxRoute(people.inbox, request, note, approvals);
  if (people.approvals) {
    const person = storePerson(people.approvals, { agent: request.agent }, note);
    return {
      name: 'gateway',
      grouped: false,
      person: {
        // Owned by the caller's subject (issuer, claim, value), so any replica finds the answer for the same
        // caller's same call, and nobody else's; valid as long as the stores wait for an answer.
        approvals: {
          secret: people.secret,
          owner: { kind: 'session', id: request.subject ?? request.caller ?? 'anonymous' },
          ttlMs: people.approvals.ttlMs ?? 900_000,
          pin,
        },
        ask: (r) => person.ask(r),
      },
    };
  }
  // A 2026-07-28 request asks through input_required and the retry (mrtr.ts) where a 2025 one is asked by
  // elicitation; the stores, when configured, come first for both (their approvers answer, never the caller).
  const approver = round
    ? // An Answer (a deny nobody gave) passes approverRoute as it is.
      (((ask: PermissionRequest) => {
        const made = roundOf(request.server);
        if (made === undefined) throw new Error('toolgate gateway: a 2026-07-28 ask outside its round; refused');
        return made.ask(kind, ask, askText(kind, ask), note, pin);
      }) as PermissionHandler)
    : elicitation(request.server, people.approvalTimeoutMs, kind);
  return approverRoute(registry, approver, approvals);
}

/** Asks the person behind the client by MCP elicitation; false when they cannot be asked or do not accept. */
async function askByElicitation(server: Server, message: string, timeoutMs: number): Promise<boolean> {
  if (!canElicit(server)) return false;
  try {
    const answer = await server.elicitInput(
      { mode: 'form', message, requestedSchema: APPROVAL_FORM },
      { timeout: timeoutMs },
    );
    return answer.action === 'accept' && answer.content?.['approve'] === true;
  } catch {
    return false; // fail closed: no answer is no
  }
}

function canElicit(server: Server): boolean {
  const elicitation = server.getClientCapabilities()?.elicitation as { form?: unknown; url?: unknown } | undefined;
  return !!elicitation && !(elicitation.form === undefined && elicitation.url !== undefined);
}

/**
 * The approver for a tool call's ask: MCP elicitation when the connected client declares it can answer a
 * form; otherwise none, and the registry's handler or its fallback (deny) decides. `timeoutMs`: how long the
 * person has to answer before the call is denied (@default 120_000).
 */
export function elicitationApprover(server: Server, timeoutMs = 120_000): PermissionHandler | undefined {
  return elicitation(server, timeoutMs, 'tool');
}

function elicitation(server: Server, timeoutMs: number, kind: ApprovalKind): PermissionHandler | undefined {
  if (!canElicit(server)) return undefined;
  return async (request: PermissionRequest) =>
    (await askByElicitation(server, askText(kind, request), timeoutMs)) ? 'allow' : 'deny';
}

/**
 * What the person is asked, by kind. Everything shown is escaped (controls, bidi and other invisible
 * characters), so the prompt reads as the call that runs.
 */
function askText(kind: ApprovalKind, request: PermissionRequest): string {
  const p = request.parameters;
  const rule = `Rule ${displaySafe(JSON.stringify(request.ruleName))} asks for approval: ${displaySafe(request.reason)}`;
  if (kind === 'resource') {
    const doing =
      p['action'] === 'read' ? 'reading' : p['action'] === 'subscribe' ? 'subscribing to' : 'completing for';
    return `Allow ${doing} the resource ${displaySafe(String(p['uri']))}? ${rule}`;
  }
  if (kind === 'prompt') {
    const args = (p['arguments'] ?? {}) as Record<string, unknown>;
    const doing = p['action'] === 'get' ? 'getting' : 'completing for';
    const withArgs = Object.keys(args).length > 0 ? ` with ${displaySafe(JSON.stringify(args))}` : '';
    return `Allow ${doing} the prompt ${displaySafe(String(p['name']))}${withArgs}? ${rule}`;
  }
  return `Allow the tool call ${displaySafe(request.toolName)}(${displaySafe(JSON.stringify(p))})? ${rule}`;
}

/** The gateway's route whose person is `approver` (elicitation or the approval stores), asked as a handler. */
function approverRoute(
  registry: ToolRegistry,
  approver: PermissionHandler | undefined,
  approvals: ApprovalSettings,
): Route {
  if (!approver) return { name: 'gateway', grouped: false };
  const handle = typeof approver === 'function' ? approver : (r: PermissionRequest) => approver.handle(r);
  return {
    name: 'gateway',
    grouped: false,
    person: {
      approvals,
      ask: async (request): Promise<AskOutcome> => {
        const metadata = registry.get(request.toolName)?.metadata;
        if (!metadata) return { effect: 'invalid', reason: `the tool ${JSON.stringify(request.toolName)} is gone` };
        const answer = await handle({
          toolName: request.toolName,
          parameters: request.parameters,
          reason: request.reason,
          ruleName: request.rule,
          metadata,
          callId: request.binding.callId,
          agent: request.agent,
          tenant: request.tenant,
          runId: request.runId,
          caller: request.caller,
        });
        return answer === 'allow' || answer === 'deny' ? { effect: answer } : (answer as never);
      },
    },
  };
}
