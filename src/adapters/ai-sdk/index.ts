/**
 * `toolgate/ai-sdk`: a ToolRegistry as a Vercel AI SDK (`ai` 7) tool set, every call through the gate.
 *
 * - The tool set holds only the tools the context's allowlist permits (what the model is offered).
 * - `toolApproval` maps the gate onto the SDK's approval flow: allow → no approval needed; deny → the
 *   SDK's `denied` status with the refusal's text (the model gets an `execution-denied` result); ask →
 *   `user-approval`, surfaced as a `tool-approval-request` part.
 * - `execute` decides again before it runs anything, so the tools are safe without `toolApproval` too:
 *   a refusal is thrown as an error whose message is the refusal text (the model gets an error result),
 *   and an ask runs only if the conversation holds the user's approval of that very tool call, else it
 *   goes to the registry's permission handler (deny without one).
 */
import { jsonSchema, tool as aiTool, type JSONSchema7, type ModelMessage, type Tool as AiTool, type ToolApprovalStatus, type ToolSet } from 'ai';
import type { GateContext } from '../../gate.js';
import { describe } from '../../names.js';
import type { ToolRegistry } from '../../registry.js';
import { ToolRegistry as Registry } from '../../registry.js';
import type { Decision } from '../../decision.js';
import { announceAsk, APPROVED, check, refusalContent, REJECTED, run, sdkMayAsk, settle } from '../route.js';

/** Options of {@link createAiSdkTools}. */
export interface AiSdkToolsOptions {
  /** Who is asking: the agent, tenant and caller whose allowlist applies. @default {} (every registered tool) */
  readonly context?: GateContext;
  /**
   * Take an approval as given only if its request carries the SDK's HMAC signature, i.e. only when
   * `generateText` / `streamText` run with `experimental_toolApprovalSecret` (the SDK then verifies the
   * signature before it executes). Set it when the message history comes from a client that could forge
   * an approval (a browser chat). @default false
   */
  readonly requireSignedApprovals?: boolean;
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
  if (!(registry instanceof Registry)) throw new TypeError(`createAiSdkTools expects a ToolRegistry, got ${describe(registry)}`);
  if (typeof options !== 'object' || options === null) throw new TypeError(`createAiSdkTools options must be an object, got ${describe(options)}`);
  const context = options.context ?? {};
  if (typeof context !== 'object' || context === null) throw new TypeError(`option "context" must be an object, got ${describe(context)}`);
  const signed = options.requireSignedApprovals ?? false;
  if (typeof signed !== 'boolean') throw new TypeError(`option "requireSignedApprovals" must be a boolean, got ${describe(signed)}`);

  const tools: Record<string, AiTool> = {};
  for (const name of registry.allowlist(context).names) {
    const defined = registry.get(name);
    if (!defined) continue;
    tools[defined.name] = aiTool({
      description: defined.description,
      // No SDK-side validation: the gate validates (step 3) so that a bad call is refused by one rule set.
      inputSchema: jsonSchema<unknown>(defined.inputSchema as JSONSchema7),
      execute: async (input: unknown, execution: { toolCallId: string; messages: ModelMessage[]; abortSignal?: AbortSignal }) => {
        const call = { id: execution.toolCallId, name: defined.name, arguments: input };
        const runContext: GateContext = execution.abortSignal ? { ...context, signal: execution.abortSignal } : context;
        const pre = await check(registry, call, runContext);
        // The SDK calls execute for an approval-gated call only after the user approved it; the approval
        // must be in the messages it passes, so an ask is never taken as approved on the SDK's word alone.
        const approver = pre.kind === 'ask' && approvedInMessages(execution.messages, execution.toolCallId, signed) ? APPROVED : undefined;
        // With the approval in hand, the ask was announced when toolApproval put it to the person.
        const result = await run(registry, await settle(registry, pre, approver, { alreadyAsked: approver !== undefined }), runContext);
        if (result.status !== 'ok') throw new ToolCallFailed(result.content);
        return result.value === undefined ? result.content : result.value;
      },
    });
  }

  const toolApproval: GatedAiSdkTools['toolApproval'] = async ({ toolCall, messages }) => {
    const call = { id: toolCall.toolCallId, name: toolCall.toolName, arguments: toolCall.input };
    const pre = await check(registry, call, context);
    if (pre.kind === 'ask' && !sdkMayAsk(registry)) return { type: 'not-applicable' }; // the policy's handler decides in execute
    if (pre.kind === 'ask') {
      // The SDK asks again when it resumes with a person's answer; the ask was announced the first time.
      if (!answeredInMessages(messages, toolCall.toolCallId)) announceAsk(registry, pre);
      return { type: 'user-approval', reason: pre.request.reason };
    }
    if (pre.decision.effect === 'allow') return { type: 'not-applicable' }; // execute decides again and records it
    await settle(registry, pre); // a refusal is final here: execute will not be called, so record it now
    return { type: 'denied', reason: refusalContent(pre.decision) };
  };

  const recordDenials: GatedAiSdkTools['recordDenials'] = async (messages) => {
    if (!Array.isArray(messages)) throw new TypeError(`recordDenials expects the messages array, got ${describe(messages)}`);
    const calls = new Map<string, { toolName: string; input: unknown }>();
    for (const message of messages) {
      if (message.role !== 'assistant' || typeof message.content === 'string') continue;
      for (const part of message.content) if (part.type === 'tool-call') calls.set(part.toolCallId, { toolName: part.toolName, input: part.input });
    }
    const recorded: Decision[] = [];
    for (const [toolCallId, call] of calls) {
      const answers = responsesTo(messages, toolCallId, false);
      if (answers.length === 0 || answers.every((approved) => approved)) continue;
      const pre = await check(registry, { id: toolCallId, name: call.toolName, arguments: call.input }, context);
      if (pre.kind !== 'ask') continue; // not an ask (any more): nothing was put to a person for it now
      recorded.push((await settle(registry, pre, REJECTED, { alreadyAsked: true })).decision);
    }
    return recorded;
  };

  return Object.freeze({ tools: tools as ToolSet, toolApproval, recordDenials });
}

/** An error a gated tool throws so that the SDK gives the model an error result with this text. */
export class ToolCallFailed extends Error {
  override name = 'ToolCallFailed';
}

/** True when `messages` hold a person's answer (either way) to an approval request for this tool call. */
function answeredInMessages(messages: readonly ModelMessage[] | undefined, toolCallId: string): boolean {
  return responsesTo(messages, toolCallId, false).length > 0;
}

/** True when `messages` hold an approval request for this tool call and only approving responses to it. */
function approvedInMessages(messages: readonly ModelMessage[] | undefined, toolCallId: string, signed: boolean): boolean {
  const responses = responsesTo(messages, toolCallId, signed);
  return responses.length > 0 && responses.every((approved) => approved); // any denial of this call wins
}

/** The `approved` flags of the responses to the (non-automatic; if `signed`, signed) approval requests for this tool call. */
function responsesTo(messages: readonly ModelMessage[] | undefined, toolCallId: string, signed: boolean): boolean[] {
  if (!Array.isArray(messages)) return [];
  const approvalIds = new Set<string>();
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-approval-request' || part.toolCallId !== toolCallId || part.isAutomatic === true) continue;
      if (signed && (typeof part.signature !== 'string' || part.signature === '')) continue;
      approvalIds.add(part.approvalId);
    }
  }
  const answers: boolean[] = [];
  if (approvalIds.size === 0) return answers;
  for (const message of messages) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type === 'tool-approval-response' && approvalIds.has(part.approvalId)) answers.push(part.approved === true);
    }
  }
  return answers;
}
