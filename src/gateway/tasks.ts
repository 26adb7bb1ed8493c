/**
 * Tasks owned by their creator (the tasks extension, SEP-2663, for 2026-07-28 clients). Where an upstream
 * offers the extension and a client declares it, a `tools/call` the gate allowed may come back as a task;
 * the call was decided at creation (an ask's approval bound it then) and is again on every read, and what the client gets is a
 * handle of the gateway's, never the upstream's raw id: the upstream's namespace and task id, the creating
 * principal (the token's subject), caller and tenant, this gateway process and the upstream connection
 * the task was created on (an upstream may number its tasks anew after a reconnect; another replica reaches
 * its own upstream process), and an expiry, under a MAC keyed by the owner's secret (nothing is stored). `tasks/get`,
 * `tasks/update` and `tasks/cancel` open the handle first: an edited or foreign handle, another principal,
 * caller or tenant, an upstream now closed to the tenant or no longer offering tasks are each refused
 * (-32602 naming why, audited) and never reach the upstream. `tasks/get` and `tasks/update` decide the
 * task's call again as the gate decides a `tools/call` now; refused, the task is cancelled upstream and
 * nothing of it passes (`tasks/cancel` by the owner stays allowed). The upstream's answer is checked and passed
 * on with the handle in place of its id. `tasks/result` (removed by the extension) and `tasks/list` (not
 * in it) stay unknown methods. Without the owner's secret the gateway offers no tasks.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { macOf, sameMac } from '../crypto.js';
import { TASK_STATUSES, type UpstreamTask } from '../mcp/index.js';
import type { GatewayAuditRecord } from './audit.js';
import type { Router } from './router.js';
import { parseJsonText } from '../json-text.js';
import { taskEnded, taskTtlMs } from './task-owners.js';
import type { CallScope, Upstream } from './upstream.js';

/** Who a task belongs to. */
export interface TaskOwner {
  /** The authenticated subject (issuer, claim, value), or null without authentication. */
  readonly subject: string | null;
  readonly caller: string | null;
  readonly tenant: string | null;
}

/** The methods of the extension the gateway serves. */
export const TASK_METHODS = ['tasks/get', 'tasks/update', 'tasks/cancel'] as const;
export type TaskMethod = (typeof TASK_METHODS)[number];

const PREFIX = 'tg-task.';

/** The key of task handles, derived from the owner's secret (never the secret itself). */
export function taskKeyOf(secret: Uint8Array): Uint8Array {
  return createHmac('sha256', secret).update('toolgate.task-handle').digest();
}

/**
 * This gateway process's random id: a handle names the process that issued it, so one brought to another
 * replica (sharing the secret) or to this one after a restart is refused by name, not by chance.
 */
const GATEWAY_BOOT = randomBytes(12).toString('base64url');

/** What a handle binds, in its order on the wire. */
type Bound = [
  version: 2,
  upstream: string,
  taskId: string,
  subject: string | null,
  caller: string | null,
  tenant: string | null,
  /** The gateway process that issued it ({@link GATEWAY_BOOT}). */
  boot: string,
  /** The upstream connection the task was created on ({@link Upstream.epoch}). */
  epoch: string,
  /** When it stops being good (ms since the epoch): the task's ttlMs, capped (task-owners.ts's taskTtlMs). */
  expiresAt: number,
];

/** Where and for how long a handle holds: the upstream's connection and the task's own ttlMs. */
export interface TaskPlace {
  readonly upstream: Pick<Upstream, 'namespace' | 'epoch'>;
  /** The task's ttlMs as the upstream gave it, if it did. */
  readonly ttlMs?: unknown;
  readonly now?: number;
}

/** The handle a client is given for an upstream's task (see the file's comment). */
export function taskHandle(key: Uint8Array, place: TaskPlace, taskId: string, owner: TaskOwner): string {
  const ttl = taskTtlMs(place.ttlMs);
  const bound: Bound = [
    2,
    place.upstream.namespace,
    taskId,
    owner.subject,
    owner.caller,
    owner.tenant,
    GATEWAY_BOOT,
    place.upstream.epoch,
    (place.now ?? Date.now()) + ttl,
  ];
  const body = Buffer.from(JSON.stringify(bound)).toString('base64url');
  return `${PREFIX}${body}.${macOf(key, ['toolgate.task', body])}`;
}

/** The call a task was created for, as the gate decided it (the tool's name as the client called it, its arguments). */
export interface TaskCall {
  readonly tool: string;
  readonly arguments: unknown;
}

/**
 * The calls of the tasks this process handed out, by handle, until the handle expires: what a task is
 * decided again on at every read. Per process, as a handle is (another process refuses the handle first).
 */
export class TaskCalls {
  readonly #calls = new Map<string, TaskCall & { readonly expiresAt: number }>();
  remember(handle: string, call: TaskCall, now = Date.now()): void {
    for (const [key, held] of this.#calls) if (!(now < held.expiresAt)) this.#calls.delete(key);
    const expiresAt = (
      parseJsonText(Buffer.from(handle.slice(PREFIX.length).split('.')[0]!, 'base64url').toString()) as Bound
    )[8];
    this.#calls.set(handle, { ...call, expiresAt });
  }
  get(handle: string): TaskCall | undefined {
    return this.#calls.get(handle);
  }
}

/** A handle opened for its owner: the upstream's namespace, its connection and its own task id; or why it was refused. */
export type OpenedTask =
  | { readonly upstream: string; readonly epoch: string; readonly taskId: string; readonly refused?: never }
  | { readonly refused: string; readonly upstream?: never; readonly epoch?: never; readonly taskId?: never };

/**
 * Opens `handle` for `owner`; anything malformed, edited, someone else's, issued by another gateway
 * process or expired is refused with the reason. The upstream connection is checked by the caller.
 */
export function openTaskHandle(key: Uint8Array, handle: unknown, owner: TaskOwner, now = Date.now()): OpenedTask {
  const refuse = (why: string): OpenedTask => ({
    refused: `toolgate gateway: the taskId ${why}; refused, nothing was sent upstream`,
  });
  if (typeof handle !== 'string' || handle.length > 8192 || !handle.startsWith(PREFIX))
    return refuse('is not a task handle of this gateway');
  const [body, mac, ...rest] = handle.slice(PREFIX.length).split('.');
  if (body === undefined || mac === undefined || rest.length > 0 || !sameMac(mac, macOf(key, ['toolgate.task', body])))
    return refuse('is not a task handle this gateway issued (malformed or edited)');
  let bound: unknown;
  try {
    bound = parseJsonText(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return refuse('is not a task handle this gateway issued (malformed)');
  }
  if (!Array.isArray(bound) || bound.length !== 9 || bound[0] !== 2)
    return refuse('is of a version this gateway does not read');
  const [, upstream, taskId, subject, caller, tenant, boot, epoch, expiresAt] = bound as Bound;
  if (subject !== owner.subject) return refuse('belongs to a task another principal created');
  if (tenant !== owner.tenant) return refuse('belongs to a task created in another tenant');
  if (caller !== owner.caller) return refuse('belongs to a task another caller created');
  if (boot !== GATEWAY_BOOT)
    return refuse(
      `was issued by another gateway process (another replica, or this one before it restarted); a handle is good only on the gateway process and the connection to "${upstream}" it was created on`,
    );
  if (!(now < expiresAt)) return refuse(`expired at ${new Date(expiresAt).toISOString()}`);
  return { upstream, epoch, taskId };
}

/** The `CreateTaskResult` a client is given for an upstream's task: its fields, the handle as its id. */
export function createdTask(task: UpstreamTask, handle: string): Record<string, unknown> {
  return { ...taskFields(task.fields), taskId: handle, resultType: 'task' };
}

/** The fields of a task the extension defines (anything else the upstream added is not passed on). */
function taskFields(fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of ['status', 'statusMessage', 'createdAt', 'lastUpdatedAt', 'ttlMs', 'pollIntervalMs'] as const)
    if (fields[key] !== undefined) out[key] = fields[key];
  return out;
}

/** Why an upstream's `tasks/get` answer is not a task the client can be given, or undefined. */
function detailedProblem(answer: Record<string, unknown>): string | undefined {
  const status = answer['status'];
  if (typeof status !== 'string' || !TASK_STATUSES.has(status))
    return `a task status ${JSON.stringify(status)} the extension does not define`;
  const object = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (status === 'completed' && !object(answer['result'])) return 'a completed task without its result';
  if (status === 'failed' && !object(answer['error'])) return 'a failed task without its error';
  if (status === 'input_required' && !object(answer['inputRequests']))
    return 'an input_required task without its inputRequests';
  return undefined;
}

/** What each input request a task may carry needs the client to have declared (MRTR's three). */
const INPUT_NEEDS: Readonly<Record<string, string>> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

/**
 * Why a task's `inputRequests` cannot be given to this client, or undefined: an entry that is not a
 * request MRTR defines, or one whose capability (an elicitation's mode too) the request did not declare
 * (-32021: the gateway never sends an input request a client did not declare).
 */
export function inputProblem(
  inputRequests: Record<string, unknown>,
  declared: Readonly<Record<string, unknown>>,
): { readonly code: -32602 | -32021; readonly message: string; readonly needs?: string } | undefined {
  for (const [key, entry] of Object.entries(inputRequests)) {
    const method = (entry as { method?: unknown } | null)?.method;
    const need = typeof method === 'string' && Object.hasOwn(INPUT_NEEDS, method) ? INPUT_NEEDS[method] : undefined;
    if (need === undefined)
      return { code: -32602, message: `an input request ${JSON.stringify(key)} that is not one MRTR defines` };
    const capability = declared[need];
    let ok = capability !== null && typeof capability === 'object';
    if (ok && need === 'elicitation') {
      const mode = (entry as { params?: { mode?: unknown } }).params?.mode ?? 'form';
      const modes = capability as { form?: unknown; url?: unknown };
      // An empty elicitation capability means form (the revision's default).
      ok = mode === 'url' ? modes.url !== undefined : modes.form !== undefined || modes.url === undefined;
    }
    if (!ok)
      return {
        code: -32021,
        needs: need,
        message: `an input request ${JSON.stringify(key)} for ${need}, which this request's clientCapabilities do not declare`,
      };
  }
  return undefined;
}

/** What serving the extension's methods needs of the gateway. */
export interface TaskDeps {
  readonly key: Uint8Array;
  readonly router: Pick<Router, 'upstreams'>;
  readonly audit: (record: GatewayAuditRecord) => void;
  /** Why the owner's tenant may not use the upstream now (`tenants:`), or null. */
  readonly closedTo: (upstream: Upstream) => string | null;
  /** The calls the tasks were created for (decided again on every tasks/get and tasks/update). */
  readonly calls: TaskCalls;
  /**
   * Decides the task's call again as the gate decides a `tools/call` now (the policy in force, this
   * request's caller): why it is refused now, or null.
   */
  readonly redecide: (call: TaskCall) => Promise<string | null>;
  /**
   * The scope of the client's request served (Relay.scopeOf): every request sent upstream for it carries
   * it, so that what the upstream sends back meanwhile (a log line) reaches that client only.
   */
  readonly scope: CallScope;
}

/** One key per owner (principal, caller, tenant): equal for exactly the requests a task's handle opens for. */
export function ownerKey(owner: TaskOwner): string {
  return JSON.stringify([owner.subject, owner.caller, owner.tenant]);
}

/** A refusal of one of the extension's requests: the protocol error's message (-32602). */
export class TaskRefusal extends Error {
  override name = 'TaskRefusal';
  /** The JSON-RPC code to answer with: -32602, or -32021 for an input request the client did not declare. */
  readonly code: -32602 | -32021;
  /** The capability missing, with -32021. */
  readonly needs: string | undefined;
  constructor(message: string, code: -32602 | -32021 = -32602, needs?: string) {
    super(message);
    this.code = code;
    this.needs = needs;
  }
}

/**
 * Serves `tasks/get`, `tasks/update` or `tasks/cancel` for `owner`: the handle opened (refused otherwise,
 * before anything is sent), the upstream's answer checked and passed on with the handle in its place.
 */
export async function serveTask(
  deps: TaskDeps,
  method: TaskMethod,
  params: Record<string, unknown>,
  owner: TaskOwner,
  /** The request's own `clientCapabilities` (what input requests it may be given). */
  declared: Readonly<Record<string, unknown>>,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  const note = (upstream: string | null, status: 'ok' | 'error' | 'refused', reason?: string) =>
    deps.audit({
      type: 'task',
      time: new Date().toISOString(),
      caller: owner.caller,
      session: null,
      method,
      upstream,
      status,
      ...(reason ? { reason } : {}),
    });
  const refuse = (reason: string): never => {
    note(null, 'refused', reason);
    throw new TaskRefusal(reason);
  };
  const handle = params['taskId'];
  const opened = openTaskHandle(deps.key, handle, owner);
  if (opened.refused !== undefined) return refuse(opened.refused);
  const upstream = deps.router.upstreams.get(opened.upstream);
  if (!upstream) return refuse(`toolgate gateway: the task's upstream "${opened.upstream}" is not configured; refused`);
  const closed = deps.closedTo(upstream);
  if (closed !== null) return refuse(closed);
  if (!upstream.offersTasks)
    return refuse(
      `toolgate gateway: upstream "${upstream.namespace}" does not offer tasks now (${upstream.state}); refused`,
    );
  // The upstream reconnected (restarted) since: its task ids may name another caller's tasks now.
  if (upstream.epoch !== opened.epoch)
    return refuse(
      `toolgate gateway: the taskId was created on an earlier connection to upstream "${upstream.namespace}" (it has reconnected since, and may number its tasks anew); refused, nothing was sent upstream`,
    );
  // A task is decided at creation and again on every read: a reload's deny or a narrowed token reaches it.
  // Cancelling stays the owner's (what an emergency deny wants); a refused read cancels the task upstream.
  if (method !== 'tasks/cancel') {
    const call = deps.calls.get(handle as string);
    let refused: string | null;
    try {
      refused = call
        ? await deps.redecide(call)
        : "toolgate gateway: the task's call is not known to this gateway process, so it cannot be decided again; refused";
    } catch (error) {
      refused = `toolgate gateway: the task's call could not be decided again (${error instanceof Error ? error.message : String(error)}); refused`;
    }
    if (refused !== null) {
      await upstream.taskRequest('tasks/cancel', { taskId: opened.taskId }, deps.scope, signal).then(
        () => upstream.tasks.ended(opened.epoch, opened.taskId),
        () => undefined,
      );
      return refuse(`${refused}; the task was cancelled upstream and nothing of it is passed on`);
    }
  }
  const sent: Record<string, unknown> = { taskId: opened.taskId };
  if (method === 'tasks/update') {
    const responses = params['inputResponses'];
    if (responses === null || typeof responses !== 'object' || Array.isArray(responses))
      return refuse('toolgate gateway: tasks/update needs inputResponses (an object); refused');
    sent['inputResponses'] = responses;
  }
  const record = (status: 'ok' | 'error', reason?: string) => note(upstream.namespace, status, reason);
  let answer: Record<string, unknown>;
  try {
    answer = await upstream.taskRequest(method, sent, deps.scope, signal);
  } catch (error) {
    record('error', error instanceof Error ? error.message : String(error));
    throw error;
  }
  // A task no longer running upstream no longer makes the upstream's log lines unattributable (Relay.log).
  if (method === 'tasks/cancel' || (method === 'tasks/get' && taskEnded(answer['status'])))
    upstream.tasks.ended(opened.epoch, opened.taskId);
  if (method !== 'tasks/get') {
    record('ok');
    return {};
  }
  const problem = detailedProblem(answer);
  if (problem !== undefined) {
    const reason = `toolgate gateway: upstream "${upstream.namespace}" answered tasks/get with ${problem}; not passed on`;
    record('error', reason);
    throw new Error(reason);
  }
  const inputRequests = answer['inputRequests'] as Record<string, unknown> | undefined;
  const input =
    answer['status'] === 'input_required' && inputRequests ? inputProblem(inputRequests, declared) : undefined;
  if (input !== undefined) {
    const reason = `toolgate gateway: upstream "${upstream.namespace}" answered tasks/get with ${input.message}; not passed on`;
    record('error', reason);
    throw new TaskRefusal(reason, input.code, input.needs);
  }
  record('ok');
  const detailed = taskFields(answer);
  for (const key of ['result', 'error', 'inputRequests'] as const)
    if (answer[key] !== undefined) detailed[key] = answer[key];
  return { ...detailed, taskId: handle };
}
