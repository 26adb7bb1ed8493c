/**
 * `toolgate/ai-sdk`: a ToolRegistry as a Vercel AI SDK (`ai` 7) tool set, every call through the gate.
 *
 * - The tool set holds only the tools the context's allowlist permits (what the model is offered).
 * - `toolApproval` maps the gate onto the SDK's approval flow: allow → no approval needed; deny → the
 *   SDK's `denied` status with the refusal's text (the model gets an `execution-denied` result); ask →
 *   `user-approval`, surfaced as a `tool-approval-request` part.
 * - `execute` decides again before it runs anything, so the tools are safe without `toolApproval` too:
 *   a refusal is thrown as an error whose message is the refusal text (the model gets an error result),
 *   and an ask runs only if the conversation holds the user's approval of that very tool call on a
 *   request signed with `approvalSecret` (toolgate verifies the SDK's HMAC over the approval id, the call
 *   id, the tool name and the very input it is about to run), else it goes to the permission handlers
 *   (deny without one). Without `approvalSecret` no approval from the message history counts.
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
import type { GateContext } from '../../gate/precheck.js';
import { describe } from '../../names.js';
import type { ToolRegistry } from '../../registry.js';
import { ToolRegistry as Registry } from '../../registry.js';
import type { Decision } from '../../decision.js';
import { announceAsk, APPROVED, check, refusalContent, REJECTED, run, sdkMayAsk, settle } from '../route.js';
import { verifyApprovalSignature } from './approval-signature.js';

/** The fewest bytes an approval secret may have (an HMAC-SHA256 key; 32 random bytes are recommended). */
const MIN_SECRET_BYTES = 16;

/** Options of {@link createAiSdkTools}. */
export interface AiSdkToolsOptions {
  /** Who is asking: the agent, tenant and caller whose allowlist applies. @default {} (every registered tool) */
  readonly context?: GateContext;
  /**
   * The server-side secret (at least 16 bytes; 32 random bytes recommended) that signs and verifies tool
   * approvals. It is returned as `experimental_toolApprovalSecret`, so spreading the result into
   * `generateText` / `streamText` makes the SDK sign each approval request it issues; `execute` then takes
   * an ask as approved only if toolgate itself verifies that signature (HMAC-SHA256 over the approval id,
   * the tool call id, the tool name and the input `execute` received). Keep it out of the client.
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
   * `handler`, `asked: 'adapter'`) for each denied call that is still an ask. Resolves with those Decisions.
   */
  readonly recordDenials: (messages: readonly ModelMessage[]) => Promise<Decision[]>;
  /** `approvalSecret`, under the name the SDK reads, so that `...gated` makes it sign approval requests. Absent without a secret. */
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
  const secret = secretBytes(options.approvalSecret);

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
        const call = { id: execution.toolCallId, name: defined.name, arguments: input };
        const runContext: GateContext = execution.abortSignal ? { ...context, signal: execution.abortSignal } : context;
        const pre = await check(registry, call, runContext);
        // The SDK calls execute for an approval-gated call only after the user approved it; the approval
        // must be in the messages it passes, on a request signed for this very call and input, so an ask is
        // never taken as approved on the SDK's word (or a client's history) alone.
        const approved =
          pre.kind === 'ask' &&
          secret !== undefined &&
          approvedInMessages(execution.messages, secret, {
            toolCallId: execution.toolCallId,
            toolName: defined.name,
            input,
          });
        const approver = approved ? APPROVED : undefined;
        // With the approval in hand, the ask was announced when toolApproval put it to the person.
        const decided = await settle(registry, pre, approver, { alreadyAsked: approved, context: runContext });
        const result = await run(registry, decided, runContext);
        if (result.status !== 'ok')
          throw new ToolCallFailed(
            secret === undefined && decided.decision.by === 'no_handler'
              ? `${result.content} ${NO_SECRET}`
              : result.content,
          );
        return result.value === undefined ? result.content : result.value;
      },
    });
  }

  const toolApproval: GatedAiSdkTools['toolApproval'] = async ({ toolCall, messages }) => {
    const call = { id: toolCall.toolCallId, name: toolCall.toolName, arguments: toolCall.input };
    const pre = await check(registry, call, context);
    // The policy's handler decides in execute; so do the handlers when no secret lets an approval count.
    if (pre.kind === 'ask' && (!sdkMayAsk(registry) || secret === undefined)) return { type: 'not-applicable' };
    if (pre.kind === 'ask') {
      // The SDK asks again when it resumes with a person's answer; the ask was announced the first time.
      if (!answeredInMessages(messages, toolCall.toolCallId)) announceAsk(registry, pre);
      return { type: 'user-approval', reason: pre.request.reason };
    }
    if (pre.decision.effect === 'allow') return { type: 'not-applicable' }; // execute decides again and records it
    await settle(registry, pre, undefined, { context }); // a refusal is final here: execute will not be called, so record it now
    return { type: 'denied', reason: refusalContent(pre.decision) };
  };

  const recordDenials: GatedAiSdkTools['recordDenials'] = async (messages) => {
    if (!Array.isArray(messages))
      throw new TypeError(`recordDenials expects the messages array, got ${describe(messages)}`);
    const calls = new Map<string, { toolName: string; input: unknown }>();
    for (const message of messages) {
      if (message.role !== 'assistant' || typeof message.content === 'string') continue;
      for (const part of message.content)
        if (part.type === 'tool-call') calls.set(part.toolCallId, { toolName: part.toolName, input: part.input });
    }
    const recorded: Decision[] = [];
    for (const [toolCallId, call] of calls) {
      const answers = responsesTo(messages, toolCallId);
      if (answers.length === 0 || answers.every((approved) => approved)) continue;
      const pre = await check(registry, { id: toolCallId, name: call.toolName, arguments: call.input }, context);
      if (pre.kind !== 'ask') continue; // not an ask (any more): nothing was put to a person for it now
      recorded.push((await settle(registry, pre, REJECTED, { alreadyAsked: true, context })).decision);
    }
    return recorded;
  };

  const gated: GatedAiSdkTools =
    secret === undefined
      ? { tools: tools as ToolSet, toolApproval, recordDenials }
      : { tools: tools as ToolSet, toolApproval, recordDenials, experimental_toolApprovalSecret: secret };
  return Object.freeze(gated);
}

/** Appended to the refusal of an ask when no secret is configured. */
const NO_SECRET =
  'Approvals through the AI SDK need the "approvalSecret" option of createAiSdkTools; without it no approval in the messages counts.';

/** The option `approvalSecret` as bytes (a private copy), or undefined when it is not set. */
function secretBytes(value: unknown): Uint8Array | undefined {
  if (value === undefined) return undefined;
  let bytes: Uint8Array;
  if (typeof value === 'string') bytes = new TextEncoder().encode(value);
  else if (value instanceof Uint8Array) bytes = Uint8Array.from(value);
  else throw new TypeError(`option "approvalSecret" must be a string or a Uint8Array, got ${describe(value)}`);
  if (bytes.length < MIN_SECRET_BYTES)
    throw new TypeError(`option "approvalSecret" must have at least ${MIN_SECRET_BYTES} bytes, got ${bytes.length}`);
  return bytes;
}

/** An error a gated tool throws so that the SDK gives the model an error result with this text. */
export class ToolCallFailed extends Error {
  override name = 'ToolCallFailed';
}

/** True when `messages` hold a person's answer (either way) to an approval request for this tool call. */
function answeredInMessages(messages: readonly ModelMessage[] | undefined, toolCallId: string): boolean {
  return responsesTo(messages, toolCallId).length > 0;
}

/**
 * True when `messages` hold an approving response to a non-automatic approval request whose signature
 * toolgate verifies for exactly this call (`toolCallId`, `toolName`, `input`), and no denying response to
 * any approval request for this call (a denial wins).
 */
function approvedInMessages(
  messages: readonly ModelMessage[] | undefined,
  secret: Uint8Array,
  call: { readonly toolCallId: string; readonly toolName: string; readonly input: unknown },
): boolean {
  const verified = requestsFor(messages, call.toolCallId, (approvalId, signature) =>
    verifyApprovalSignature(secret, signature, { approvalId, ...call }),
  );
  if (verified.size === 0) return false;
  if (responsesTo(messages, call.toolCallId).some((approved) => !approved)) return false;
  return answersTo(messages, verified).some((approved) => approved);
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
