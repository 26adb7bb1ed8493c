/**
 * `toolgate/openai-agents`: ToolRegistry tools as OpenAI Agents SDK (`@openai/agents`) function tools,
 * every call through the gate.
 *
 * - `isEnabled` is the allowlist of the run's context, so the model is offered only permitted tools.
 * - `needsApproval` is the gate's `ask`: the run pauses with an interruption that the application
 *   resolves with `state.approve(item)` / `state.reject(item)`.
 * - `execute` dispatches the call through the one path (src/gate/dispatch.ts). A refusal is the tool's
 *   output (the refusal text, which the model reads as it reads the SDK's own rejection message); an ask
 *   runs only when the SDK's run context records the approval of that call AND the call is the very one
 *   the interruption was raised for in this process (tool, arguments hash, policy version: a state edited
 *   between pause and resume does not carry an approval over to other arguments); else the registry's
 *   handler decides (deny without one). An approval raised in another process cannot be checked and denies.
 * - `toolErrorFormatter` records a person's rejection as a deny Decision and tells the model so.
 * - `mcpToolFilter` hides tools of the SDK's own MCP servers that the allowlist does not permit.
 */
import { randomBytes } from 'node:crypto';
import {
  tool as agentTool,
  type FunctionTool,
  type MCPToolFilterCallable,
  type RunContext,
  type ToolErrorFormatter,
} from '@openai/agents';
import { readCall } from '../../formats/index.js';
import type { ContextSource } from '../../contracts/gate.js';
import {
  approvalRequest,
  decideCalls,
  dispatchCalls,
  previewCall,
  refusalContent,
  sameBinding,
  type ApprovalRequest,
  type AskOutcome,
  type GateContext,
  type Route,
  type ToolResult,
} from '../../gate/index.js';
import { describe } from '../../names.js';
import { ToolRegistry } from '../../registry.js';

/** The gate context of a run: fixed, or read from the SDK's run context (e.g. the tenant in `runContext.context`). */
export type AgentsGateContext<TContext = unknown> = ContextSource<RunContext<TContext>>;

/** Options of {@link createAgentTools}. */
export interface AgentToolsOptions<TContext = unknown> {
  /** Who is asking. @default {} (every registered tool, the default agent) */
  readonly context?: AgentsGateContext<TContext>;
  /** Only these registered tools (declared names). @default every tool registered now */
  readonly tools?: readonly string[];
}

/** What {@link createAgentTools} returns. */
export interface GatedAgentTools<TContext = unknown> {
  /** One SDK function tool per registry tool; pass to `new Agent({ tools })`. */
  readonly tools: FunctionTool<TContext>[];
  /** Pass to `run(…, { toolErrorFormatter })` so a person's rejection is recorded and worded by toolgate. */
  readonly toolErrorFormatter: ToolErrorFormatter;
}

/** The SDK's non-strict JSON-schema parameter shape, which a tool's own JSON Schema is passed as. */
type NonStrictParameters = {
  type: 'object';
  properties: Record<string, never>;
  required: never[];
  additionalProperties: true;
};

/** How many unresolved interruptions are remembered (oldest dropped first). */
const PENDING_LIMIT = 1024;

/**
 * Wraps registry tools as Agents SDK tools whose calls pass toolgate's gate.
 *
 * @example
 * const gated = createAgentTools(registry, { context: (rc) => ({ agent: 'concierge', tenant: rc.context.tenant }) });
 * const agent = new Agent({ name: 'concierge', model, tools: gated.tools });
 * let result = await run(agent, 'refund order 7', { context, toolErrorFormatter: gated.toolErrorFormatter });
 * for (const item of result.interruptions ?? []) result.state.approve(item);
 * result = await run(agent, result.state, { toolErrorFormatter: gated.toolErrorFormatter });
 */
export function createAgentTools<TContext = unknown>(
  registry: ToolRegistry,
  options: AgentToolsOptions<TContext> = {},
): GatedAgentTools<TContext> {
  if (!(registry instanceof ToolRegistry))
    throw new TypeError(`createAgentTools expects a ToolRegistry, got ${describe(registry)}`);
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`createAgentTools options must be an object, got ${describe(options)}`);
  const contextOf = contextReader<TContext>(options.context, 'createAgentTools');
  const selected =
    options.tools === undefined
      ? registry.list()
      : options.tools.map((name) => {
          const found = registry.get(name);
          if (!found) throw new TypeError(`option "tools": no tool named ${JSON.stringify(name)} is registered`);
          return found;
        });
  const pending = new Map<string, Interruption>();
  const ours = new Set<string>();
  // The key of this tool set's approval requests: they live only in this instance's memory (an interruption
  // raised in another process cannot be checked and denies), so the owner's key is this instance's own.
  const approvals = { secret: randomBytes(32) };

  const tools = selected.map((defined) => {
    ours.add(defined.name);
    const sdkTool = agentTool<NonStrictParameters, TContext, unknown>({
      name: defined.name,
      description: defined.description,
      // Not strict: the gate validates against the tool's own schema (step 3), whatever the SDK accepts.
      parameters: defined.inputSchema as NonStrictParameters,
      strict: false,
      isEnabled: ({ runContext }) => registry.allowlist(contextOf(runContext)).permits(defined.name),
      needsApproval: async (runContext, input, callId) => {
        const context = contextOf(runContext as RunContext<TContext>);
        const pre = await previewCall(
          readCall({ id: callId ?? '', name: defined.name, arguments: input }),
          context,
          registry,
        );
        // execute decides again and records it; an ask the policy's own handler answers is not the SDK's to put
        if (pre.kind !== 'ask' || registry.getPermissionPolicy()?.handler) return false;
        // The approval the SDK will record is bound to this call as it is now. The first interruption wins,
        // and a call the SDK already holds an answer for is not bound again: the SDK re-evaluates
        // needsApproval on a resume it cannot match to its own tool object (another process), and the
        // arguments then are not the ones a person was shown here.
        const answered =
          callId !== undefined && runContext.isToolApproved({ toolName: defined.name, callId }) !== undefined;
        if (!answered && !pending.has(pre.base.callId))
          remember(pending, pre.base.callId, { context, request: approvalRequest(pre, context, approvals) });
        return true;
      },
      execute: async (input, runContext, details) => {
        const callId = details?.toolCall?.callId ?? '';
        const base = runContext ? contextOf(runContext) : contextOf(undefined);
        const context: GateContext = details?.signal ? { ...base, signal: details.signal } : base;
        const approved = callId !== '' && runContext?.isToolApproved({ toolName: defined.name, callId }) === true;
        const interruption = pending.get(callId);
        pending.delete(callId);
        const route: Route = {
          name: 'adapter',
          grouped: false,
          person: {
            approvals,
            // The SDK calls execute for an approval-gated call only once the run context records the approval.
            ask: (request): AskOutcome | null => {
              if (!approved) return null;
              if (!interruption)
                return {
                  effect: 'invalid',
                  reason: 'the SDK records an approval, but this process raised no interruption for this call',
                };
              const problem = sameBinding(interruption.request.binding, request.binding);
              return problem === null ? { effect: 'allow' } : { effect: 'invalid', reason: problem };
            },
          },
        };
        const [result] = (await dispatchCalls(
          [readCall({ id: callId, name: defined.name, arguments: input })],
          context,
          registry,
          route,
        )) as ToolResult[];
        return result!.status === 'ok' && result!.value !== undefined ? result!.value : result!.content;
      },
    });
    // The SDK's FunctionTool is generic over its parameters; the list holds them under the context type only.
    return sdkTool as unknown as FunctionTool<TContext>;
  });

  const toolErrorFormatter: ToolErrorFormatter = async (args) => {
    if (args.kind !== 'approval_rejected' || !ours.has(args.toolName)) return undefined;
    const interruption = pending.get(args.callId);
    if (!interruption) return undefined; // asked in another process: the SDK's own message stands
    pending.delete(args.callId);
    // The person's rejection, recorded as the route's answer to the call the interruption was raised for
    // (if it is still an ask: otherwise nothing was put to a person for it now).
    const call = readCall({ id: args.callId, name: args.toolName, arguments: interruption.request.parameters });
    if ((await previewCall(call, interruption.context, registry)).kind !== 'ask') return undefined;
    const rejected: Route = { name: 'adapter', grouped: false, person: { approvals, ask: () => ({ effect: 'deny' }) } };
    const [decision] = await decideCalls([call], interruption.context, registry, rejected);
    return decision?.effect === 'deny' ? refusalContent(decision) : undefined;
  };

  return Object.freeze({ tools, toolErrorFormatter });
}

/** Options of {@link mcpToolFilter}. */
export interface McpToolFilterOptions<TContext = unknown> {
  /** Who is asking; the agent layer must declare the MCP tool names (with `prefix`). */
  readonly context?: AgentsGateContext<TContext>;
  /** The namespace the allowlist knows the server's tools by: `github` makes `search` → `github:search`. @default 'mcp' */
  readonly prefix?: string | null;
}

/**
 * An Agents SDK MCP `toolFilter` from the allowlist: a server tool is listed only if the allowlist of the
 * run's context permits its (namespaced) name. Without an agent declaration the agent declares the
 * registry's tools, which do not include an SDK-managed server's tools, so they are all hidden.
 *
 * The filter only hides tools; calls to an SDK-managed MCP server do not pass toolgate's policy. To
 * enforce rules and approvals on MCP tools, register them with `toolgate/mcp` and use {@link createAgentTools}.
 *
 * @example
 * new MCPServerStdio({ command, toolFilter: mcpToolFilter(registry, { context: { agent: { name: 'a', tools: ['mcp:read_file'] } } }) })
 */
export function mcpToolFilter<TContext = unknown>(
  registry: ToolRegistry,
  options: McpToolFilterOptions<TContext> = {},
): MCPToolFilterCallable<TContext> {
  if (!(registry instanceof ToolRegistry))
    throw new TypeError(`mcpToolFilter expects a ToolRegistry, got ${describe(registry)}`);
  const contextOf = contextReader<TContext>(options.context, 'mcpToolFilter');
  const prefix = options.prefix === undefined ? 'mcp' : options.prefix;
  if (prefix !== null && (typeof prefix !== 'string' || prefix === '' || prefix.includes(':'))) {
    throw new TypeError(`option "prefix" must be a non-empty string without ":" or null, got ${describe(prefix)}`);
  }
  return async ({ runContext }, mcpTool) => {
    try {
      const name = prefix === null ? mcpTool.name : `${prefix}:${mcpTool.name}`;
      return registry.allowlist(contextOf(runContext)).permits(name);
    } catch {
      return false; // a broken context hides the tool rather than showing it
    }
  };
}

function contextReader<TContext>(
  option: AgentsGateContext<TContext> | undefined,
  where: string,
): (runContext: RunContext<TContext> | undefined) => GateContext {
  if (option === undefined) return () => ({});
  if (typeof option === 'function') {
    return (runContext) => {
      if (!runContext)
        throw new TypeError(`${where}: the context function needs the SDK's run context, and none was given`);
      return option(runContext);
    };
  }
  if (typeof option !== 'object' || option === null)
    throw new TypeError(`${where}: option "context" must be an object or a function, got ${describe(option)}`);
  return () => option;
}

/** The call an interruption was raised for: the request (and its binding) the SDK's approval of it is bound to. */
interface Interruption {
  readonly context: GateContext;
  readonly request: ApprovalRequest;
}

function remember(pending: Map<string, Interruption>, callId: string, interruption: Interruption): void {
  if (pending.size >= PENDING_LIMIT) pending.delete(pending.keys().next().value!);
  pending.set(callId, interruption);
}
