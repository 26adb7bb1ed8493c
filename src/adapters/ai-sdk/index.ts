/**
 * `toolgate/ai-sdk`: a ToolRegistry as a Vercel AI SDK (`ai` 7) tool set, every call through the gate.
 *
 * - The tool set holds only the tools the context's allowlist permits (what the model is offered).
 * - `toolApproval` maps the gate onto the SDK's approval flow: allow → no approval needed; deny → the
 *   SDK's `denied` status with the refusal's text (the model gets an `execution-denied` result); ask →
 *   `user-approval`, surfaced as a `tool-approval-request` part.
 * - `execute` dispatches the call through the one path (src/gate/dispatch.ts) with this adapter's route,
 *   so the tools are safe without `toolApproval` too: a refusal is thrown as an error whose message is the
 *   refusal text (the model gets an error result), and an ask runs only if the conversation holds the
 *   user's approval of that very tool call on a request signed with `approvalSecret` (toolgate verifies
 *   the SDK's HMAC over the approval id, the call id, the tool name and the very input it is about to
 *   run), else it goes to the permission handlers (deny without one). Without `approvalSecret` no
 *   approval from the message history counts.
 */
import {
  jsonSchema,
  tool as aiTool,
  type JSONSchema7,
  type ModelMessage,
  type Tool as AiTool,
  type ToolApprovalStatus,
  type ToolSet,
} from 'ai';
import type { Decision } from '../../decision.js';
import { readCall, type NormalizedCall, type UnreadableCall } from '../../formats/index.js';
import {
  boundAgentOf,
  decideCalls,
  dispatchCalls,
  previewCall,
  refusalContent,
  type AskOutcome,
  type GateContext,
  type Route,
  type ToolResult,
} from '../../gate/index.js';
import { secretOf } from '../../crypto.js';
import { describe } from '../../names.js';
import type { ToolRegistry } from '../../registry.js';
import { ToolRegistry as Registry } from '../../registry.js';
import { approvalKeys, verifyApprovalSignature } from './approval-signature.js';

/** Options of {@link createAiSdkTools}. */
export interface AiSdkToolsOptions {
  /** Who is asking: the agent, tenant and caller whose allowlist applies. @default {} (every registered tool) */
  readonly context?: GateContext;
  /**
   * The server-side secret (at least 16 bytes; 32 random bytes recommended) that signs and verifies tool
   * approvals. A key derived from it for this context (tenant id, caller id, agent) and the policy version
   * in force is returned as `experimental_toolApprovalSecret`, so spreading the result into
   * `generateText` / `streamText` makes the SDK sign each approval request it issues; `execute` then takes
   * an ask as approved only if toolgate itself verifies that signature (HMAC-SHA256 over the approval id,
   * the tool call id, the tool name and the input `execute` received) under the key of its context and the
   * policy version in force then. Keep it out of the client.
   * Without it, no approval in the message history counts: an ask is put to the permission handlers
   * (denied without one), never to the SDK's approval flow.
   */
  readonly approvalSecret?: string | Uint8Array;
}

/** What {@link createAiSdkTools} returns: spread it into `generateText` / `streamText`. */
export interface GatedAiSdkTools {
  /** The permitted tools, keyed by their declared names. */
  readonly tools: ToolSet;
  /** The gate as the SDK's generic tool-approval function. */
  readonly toolApproval: (options: {
    readonly toolCall: { readonly toolCallId: string; readonly toolName: string; readonly input: unknown };
    readonly messages?: ModelMessage[];
  }) => Promise<ToolApprovalStatus>;
  /**
   * Records a person's denials: the SDK turns a denied approval into an `execution-denied` result without
   * calling the tool set, so call this with the messages you resume with to emit a deny Decision (stage
   * `handler`, `asked: 'adapter'`) for each denied call that is still an ask. Only a denial of an approval
   * request signed with `approvalSecret` for that very call counts (without the secret nothing is
   * recorded): a client cannot have made-up calls recorded as a person's denial. Resolves with those Decisions.
   */
  readonly recordDenials: (messages: readonly ModelMessage[]) => Promise<Decision[]>;
  /**
   * The key derived from `approvalSecret` for this context and the policy version in force when it is read
   * (a getter: `...gated` reads it), under the name the SDK reads, so that the SDK signs approval requests
   * with it. Absent without a secret.
   */
  readonly experimental_toolApprovalSecret?: Uint8Array;
}

/**
 * Turns a registry and a context into an AI SDK tool set whose calls pass toolgate's gate.
 *
 * @example
 * const gated = createAiSdkTools(registry, { context: { agent: 'concierge', tenant: { id: 'acme', tools: ['search'] } } });
 * const result = await generateText({ model, prompt, ...gated });
 * // result.content may hold 'tool-approval-request' parts for calls a rule answered `ask` for
 */
export function createAiSdkTools(registry: ToolRegistry, options: AiSdkToolsOptions = {}): GatedAiSdkTools {
  if (!(registry instanceof Registry))
    throw new TypeError(`createAiSdkTools expects a ToolRegistry, got ${describe(registry)}`);
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`createAiSdkTools options must be an object, got ${describe(options)}`);
  const context = options.context ?? {};
  if (typeof context !== 'object' || context === null)
    throw new TypeError(`option "context" must be an object, got ${describe(context)}`);
  if ('requireSignedApprovals' in options) {
    throw new TypeError(
      'option "requireSignedApprovals" was removed: approvals are always verified; pass "approvalSecret" to let them count',
    );
  }
  const master = secretBytes(options.approvalSecret);
  // The SDK signs with a key of this context and the policy version in force (read when `...gated` is
  // spread and when a call is checked): an approval given under another context or policy does not count.
  const keyOf =
    master === undefined
      ? undefined
      : approvalKeys(
          master,
          { tenant: context.tenant?.id ?? null, caller: context.caller?.id ?? null, agent: boundAgentOf(context) },
          () => registry.getPermissionPolicy()?.version ?? null,
        );

  const tools: Record<string, AiTool> = {};
  for (const name of registry.allowlist(context).names) {
    const defined = registry.get(name);
    if (!defined) continue;
    tools[defined.name] = aiTool({
      description: defined.description,
      // No SDK-side validation: the gate validates (step 3) so that a bad call is refused by one rule set.
      inputSchema: jsonSchema<unknown>(defined.inputSchema as JSONSchema7),
      execute: async (
        input: unknown,
        execution: { toolCallId: string; messages: ModelMessage[]; abortSignal?: AbortSignal },
      ) => {
        const call = readCall({ id: execution.toolCallId, name: defined.name, arguments: input });
        const runContext: GateContext = execution.abortSignal ? { ...context, signal: execution.abortSignal } : context;
        // The SDK calls execute for an approval-gated call only after the user approved it; the approval
        // must be in the messages it passes, on a request signed for this very call and input, so an ask is
        // never taken as approved on the SDK's word (or a client's history) alone.
        const signed = { toolCallId: execution.toolCallId, toolName: defined.name, input };
        const route: Route =
          keyOf === undefined
            ? NO_PERSON
            : {
                name: 'adapter',
                grouped: false,
                person: {
                  approvals: { secret: master! },
                  // A request toolgate's secret signed was issued by toolApproval, which announced the ask then.
                  announced: () => verifiedRequests(execution.messages, keyOf(), signed).size > 0,
                  ask: () => answerInMessages(execution.messages, keyOf(), signed),
                },
              };
        const result = (await dispatchOne(registry, call, runContext, route)) as ToolResult;
        if (result.status !== 'ok')
          throw new ToolCallFailed(
            keyOf === undefined && result.decision.by === 'no_handler'
              ? `${result.content} ${NO_SECRET}`
              : (result.decision.stage === 'policy' || result.decision.stage === 'handler') &&
                  keyOf !== undefined &&
                  verifiedRequests(execution.messages, keyOf(), signed).size === 0 &&
                  responsesTo(execution.messages, execution.toolCallId).some((yes) => yes)
                ? `${result.content} ${UNVERIFIED}`
                : result.content,
          );
        return result.value === undefined ? result.content : result.value;
      },
    });
  }

  const toolApproval: GatedAiSdkTools['toolApproval'] = async ({ toolCall, messages }) => {
    const call = readCall({ id: toolCall.toolCallId, name: toolCall.toolName, arguments: toolCall.input });
    const pre = await previewCall(call, context, registry);
    if (pre.kind === 'ask') {
      // The policy's handler decides in execute; so do the handlers when no secret lets an approval count.
      if (registry.getPermissionPolicy()?.handler || keyOf === undefined) return { type: 'not-applicable' };
      // The ask is announced when it is first put to the person; asked again with a request the secret
      // signed for this very call (the SDK resuming), it was announced then. A forged, unsigned request or
      // response in the history does not count as that.
      const signed = { toolCallId: toolCall.toolCallId, toolName: toolCall.toolName, input: toolCall.input };
      if (verifiedRequests(messages, keyOf(), signed).size === 0)
        await dispatchCalls([call], context, registry, putToPerson(master!));
      return { type: 'user-approval', reason: pre.request.reason };
    }
    if (pre.decision.effect === 'allow') return { type: 'not-applicable' }; // execute decides again and records it
    // A refusal is final here: execute will not be called, so decide (and record) it now.
    const [decision] = await decideCalls([call], context, registry, NO_PERSON);
    if (!decision || decision.effect === 'allow') return { type: 'not-applicable' };
    return { type: 'denied', reason: refusalContent(decision) };
  };

  const recordDenials: GatedAiSdkTools['recordDenials'] = async (messages) => {
    if (!Array.isArray(messages))
      throw new TypeError(`recordDenials expects the messages array, got ${describe(messages)}`);
    if (keyOf === undefined) return [];
    const calls = new Map<string, { toolName: string; input: unknown }>();
    for (const message of messages) {
      if (message.role !== 'assistant' || typeof message.content === 'string') continue;
      for (const part of message.content)
        if (part.type === 'tool-call') calls.set(part.toolCallId, { toolName: part.toolName, input: part.input });
    }
    const recorded: Decision[] = [];
    for (const [toolCallId, call] of calls) {
      // Only a denial of a request toolgate's secret signed for exactly this call is a person's denial.
      const verified = verifiedRequests(messages, keyOf(), { toolCallId, ...call });
      if (!answersTo(messages, verified).some((approved) => !approved)) continue;
      const read = readCall({ id: toolCallId, name: call.toolName, arguments: call.input });
      const pre = await previewCall(read, context, registry);
      if (pre.kind !== 'ask') continue; // not an ask (any more): nothing was put to a person for it now
      // Announced when toolApproval put it to the person (the signed request proves it did).
      const denied: Route = {
        name: 'adapter',
        grouped: false,
        person: { approvals: { secret: master! }, announced: () => true, ask: () => ({ effect: 'deny' }) },
      };
      recorded.push(...(await decideCalls([read], context, registry, denied)));
    }
    return recorded;
  };

  const gated = { tools: tools as ToolSet, toolApproval, recordDenials };
  if (keyOf !== undefined)
    Object.defineProperty(gated, 'experimental_toolApprovalSecret', { get: keyOf, enumerable: true });
  return Object.freeze(gated) as GatedAiSdkTools;
}

/** A route with no person: an ask goes to the permission handlers (deny without one). */
const NO_PERSON: Route = Object.freeze({ name: 'adapter', grouped: false });
/** The SDK puts the ask to a person: announced now, answered when execute runs (nothing runs here). */
function putToPerson(secret: Uint8Array): Route {
  return {
    name: 'adapter',
    grouped: false,
    person: { approvals: { secret }, ask: (): AskOutcome => ({ effect: 'pending' }) },
  };
}

/** One call through the one path on this adapter's route. */
async function dispatchOne(
  registry: ToolRegistry,
  call: NormalizedCall | UnreadableCall,
  context: GateContext,
  route: Route,
): Promise<ToolResult> {
  const [result] = await dispatchCalls([call], context, registry, route);
  return result as ToolResult;
}

/** Appended to the refusal of an ask when no secret is configured. */
const UNVERIFIED =
  'The approval of this call in the messages does not count: its signature is missing or does not verify for this tool call and its input (a forged, altered or replayed approval).';
const NO_SECRET =
  'Approvals through the AI SDK need the "approvalSecret" option of createAiSdkTools; without it no approval in the messages counts.';

/** The option `approvalSecret` as bytes (a private copy), or undefined when it is not set. */
function secretBytes(value: unknown): Uint8Array | undefined {
  return value === undefined ? undefined : secretOf(value, 'option "approvalSecret"');
}

/** An error a gated tool throws so that the SDK gives the model an error result with this text. */
export class ToolCallFailed extends Error {
  override name = 'ToolCallFailed';
}

/**
 * The person's answer to this call in `messages`: allow when they hold an approving response to a
 * non-automatic approval request whose signature toolgate verifies for exactly this call (`toolCallId`,
 * `toolName`, `input`) and no denying response to any approval request for this call (a denial wins);
 * deny when a verified request was denied; null (no person for this call: the handlers decide) otherwise.
 */
function answerInMessages(
  messages: readonly ModelMessage[] | undefined,
  secret: Uint8Array,
  call: { readonly toolCallId: string; readonly toolName: string; readonly input: unknown },
): AskOutcome | null {
  const verified = verifiedRequests(messages, secret, call);
  if (verified.size === 0) return null;
  const answers = answersTo(messages, verified);
  if (answers.some((approved) => !approved)) return { effect: 'deny' };
  // A denial of this call on a request toolgate did not sign is no person's answer, but it still stops
  // the approval from counting: the handlers decide.
  if (responsesTo(messages, call.toolCallId).some((approved) => !approved)) return null;
  return answers.some((approved) => approved) ? { effect: 'allow' } : null;
}

/** The ids of the non-automatic approval requests whose signature toolgate verifies for exactly this call. */
function verifiedRequests(
  messages: readonly ModelMessage[] | undefined,
  secret: Uint8Array,
  call: { readonly toolCallId: string; readonly toolName: string; readonly input: unknown },
): Set<string> {
  return requestsFor(messages, call.toolCallId, (approvalId, signature) =>
    verifyApprovalSignature(secret, signature, { approvalId, ...call }),
  );
}

/** The `approved` flags of the responses to the non-automatic approval requests for this tool call. */
function responsesTo(messages: readonly ModelMessage[] | undefined, toolCallId: string): boolean[] {
  return answersTo(
    messages,
    requestsFor(messages, toolCallId, () => true),
  );
}

/** The approval ids of the non-automatic approval requests for this tool call that `accept` accepts. */
function requestsFor(
  messages: readonly ModelMessage[] | undefined,
  toolCallId: string,
  accept: (approvalId: string, signature: unknown) => boolean,
): Set<string> {
  const approvalIds = new Set<string>();
  if (!Array.isArray(messages)) return approvalIds;
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-approval-request' || part.toolCallId !== toolCallId || part.isAutomatic === true)
        continue;
      if (accept(part.approvalId, part.signature)) approvalIds.add(part.approvalId);
    }
  }
  return approvalIds;
}

/** The `approved` flags of the responses to these approval ids. */
function answersTo(messages: readonly ModelMessage[] | undefined, approvalIds: ReadonlySet<string>): boolean[] {
  const answers: boolean[] = [];
  if (approvalIds.size === 0 || !Array.isArray(messages)) return answers;
  for (const message of messages) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type === 'tool-approval-response' && approvalIds.has(part.approvalId))
        answers.push(part.approved === true);
    }
  }
  return answers;
}
