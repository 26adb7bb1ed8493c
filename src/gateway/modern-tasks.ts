/**
 * The tasks extension (SEP-2663) on one 2026-07-28 request's server (modern.ts): an upstream's task in a
 * `tools/call` result handed to the client as a handle of the gateway's, and the extension's own requests
 * (`tasks/get`, `tasks/update`, `tasks/cancel`) served by tasks.ts for the request's owner. Each goes
 * upstream in the scope of the client's request it serves, as every forwarded request does: what the
 * upstream sends back while it serves it (a log line) reaches that client only.
 */
import { randomUUID } from 'node:crypto';
import {
  ProtocolError,
  ProtocolErrorCode,
  type Server as ModernServer,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { GateContext } from '../contracts/gate.js';
import { readCall } from '../formats/index.js';
import { previewCall, ruleAndReason } from '../gate/index.js';
import { upstreamTaskOf } from '../mcp/index.js';
import { sessionSubject } from './auth.js';
import type { GatewayCore, SessionRequest } from './session.js';
import {
  createdTask,
  serveTask,
  TASK_METHODS,
  TaskCalls,
  TaskRefusal,
  taskHandle,
  type TaskCall,
  type TaskDeps,
  type TaskOwner,
} from './tasks.js';
import { upstreamClosedTo } from './tenancy.js';
import { objectSchema } from './upstream-client.js';

/** The calls of the tasks this process handed out (tasks.ts): decided again on every read. */
const TASK_CALLS = new TaskCalls();

/** The params object as it came (serveTask checks what it reads). */
const PARAMS = objectSchema('params must be an object');

/** Who a task created or reached in a request belongs to. */
export function ownerOf(ctx: ServerContext, context: GateContext): TaskOwner {
  return {
    subject: ctx.http?.authInfo ? sessionSubject(ctx.http.authInfo as never) : null,
    caller: context.caller?.id ?? null,
    tenant: context.tenant?.id ?? null,
  };
}

/** What the extension needs of one request's server (modern-binding.ts). */
export interface TaskRequests {
  readonly core: GatewayCore;
  /** The key of the handles (tasks.ts taskKeyOf). */
  readonly key: Uint8Array;
  /** The request's peer ("the client's server", modern-peer.ts): where the scope's notifications go. */
  readonly peer: Server;
  /** The session request of a handler's context. */
  readonly of: (ctx: ServerContext) => SessionRequest;
  /** The context a request is decided under. */
  readonly contextOf: (request: SessionRequest) => GateContext;
}

/**
 * A `tools/call` result as the client is given it: an upstream's task as a handle of the gateway's bound
 * to this request's owner (its call remembered, decided again on every read), anything else as it came.
 */
export function taskOrResult(
  requests: TaskRequests,
  result: Record<string, unknown>,
  tool: string,
  args: unknown,
  ctx: ServerContext,
): Record<string, unknown> {
  const task = upstreamTaskOf(result);
  if (task === undefined) return result;
  const upstream = requests.core.router.ownerOfTool(tool);
  if (upstream === undefined)
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      'toolgate gateway: an upstream task for a request that does not take one',
    );
  const owner = ownerOf(ctx, requests.contextOf(requests.of(ctx)));
  const handle = taskHandle(requests.key, { upstream, ttlMs: task.fields['ttlMs'] }, task.taskId, owner);
  TASK_CALLS.remember(handle, { tool, arguments: args });
  return createdTask(task, handle);
}

/** Sets the extension's handlers on one request's server (or the fast path's table). */
export function bindTaskHandlers(server: Pick<ModernServer, 'setRequestHandler'>, requests: TaskRequests): void {
  const { core } = requests;
  for (const method of TASK_METHODS)
    server.setRequestHandler(
      method,
      { params: PARAMS } as never,
      (async (params: Record<string, unknown>, ctx: ServerContext) => {
        const request = requests.of(ctx);
        const context = requests.contextOf(request);
        const deps: TaskDeps = {
          key: requests.key,
          router: core.router,
          audit: core.audit,
          closedTo: (upstream) => upstreamClosedTo(core.inForce.current.set, upstream.namespace, context.tenant?.id),
          calls: TASK_CALLS,
          // The gate's own precheck, as a tools/call is decided (no second rule check); an ask was
          // answered when the task was created.
          redecide: async (call: TaskCall) => {
            const given = { id: `task-${randomUUID()}`, name: call.tool, arguments: call.arguments };
            const pre = await previewCall(readCall(given), context, core.registry);
            if (pre.kind !== 'decided' || pre.decision.effect !== 'deny') return null;
            return `toolgate gateway: the task's tool call ${JSON.stringify(call.tool)} is refused now${ruleAndReason(pre.decision)}`;
          },
          scope: core.relay.scopeOf(requests.peer, request),
        };
        try {
          // The SDK lifts a request's inputResponses out of its params (the MRTR field): tasks/update's are there.
          const given = method === 'tasks/update' ? { ...params, inputResponses: ctx.mcpReq.inputResponses } : params;
          const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
          const declared = (envelope?.['io.modelcontextprotocol/clientCapabilities'] ?? {}) as Record<string, unknown>;
          const answer = await serveTask(deps, method, given, ownerOf(ctx, context), declared, ctx.mcpReq.signal);
          // The log lines of the request reach the client before its answer (as Relay.forwarded does).
          await core.relay.delivered(requests.peer);
          return answer;
        } catch (error) {
          if (error instanceof TaskRefusal)
            throw new ProtocolError(
              error.code,
              error.message,
              error.needs ? { requiredCapabilities: { [error.needs]: {} } } : undefined,
            );
          throw error;
        }
      }) as never,
    );
}
