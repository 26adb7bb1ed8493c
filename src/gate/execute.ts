/**
 * Step 7: executes an allowed call with the snapshot it was decided on — a timeout per tool, the dispatch's
 * abort signal, and concurrency grouping (consecutive concurrency-safe calls together, any other call
 * alone). A throw or a timeout is an error result; nothing here throws. Only dispatch.ts calls it.
 */
import type { AllowDecision, Decision, DenyDecision } from '../decision.js';
import { errorText } from '../permissions/handler.js';
import type { Tool, ToolExecution } from '../tool.js';
import type { GateContext, GateEnvironment, ToolResult } from '../contracts/gate.js';
import type { DecidedCall } from '../contracts/route.js';
import { keepController, pools, takeController } from './controller-pool.js';
import { refusalContent } from './precheck.js';

/**
 * Runs a decided call: its tool's execute with the frozen snapshot, under its timeout and the context's signal.
 * The tool is called before this returns (the fast path starts it without a microtask); a tool that returned
 * a plain value has finished, so its result is built at once and nothing is timed. A promise is watched under
 * the tool's deadline in the one shared {@link Deadlines} queue (no timer of its own per call).
 */
export function executeDecided(decided: DecidedCall, context: GateContext, env: GateEnvironment): Promise<ToolResult> {
  return execute(decided.tool, decided.decision, decided.args, context, env);
}

/**
 * {@link executeDecided} without the DecidedCall around its parts (the fast path has them apart). With `shape`,
 * the promise settles with `shape(result)` instead (a caller's own form of the result, made in the same hop).
 */
export function execute(
  tool: Tool,
  decision: AllowDecision,
  args: Readonly<Record<string, unknown>>,
  context: GateContext,
  env: GateEnvironment,
): Promise<ToolResult>;
export function execute<R>(
  tool: Tool,
  decision: AllowDecision,
  args: Readonly<Record<string, unknown>>,
  context: GateContext,
  env: GateEnvironment,
  shape: (result: ToolResult) => R,
): Promise<R>;
export function execute(
  tool: Tool,
  decision: AllowDecision,
  args: Readonly<Record<string, unknown>>,
  context: GateContext,
  env: GateEnvironment,
  shape: Shape | null = null,
): Promise<unknown> {
  const gateway = gatewayCalls.has(context);
  const execution = new Execution(decision.callId, gateway && pools(tool));
  const outer = context.signal;
  const started = performance.now();
  let value: unknown;
  if (outer) {
    if (outer.aborted)
      return settled(
        failed(decision, env, started, new Error('the dispatch was cancelled before the tool ran')),
        shape,
      );
    execution.follow(outer);
  }
  try {
    value = tool.execute(args as Record<string, unknown>, execution);
  } catch (error) {
    execution.unfollow();
    return settled(failed(decision, env, started, error), shape);
  }
  if (!isThenable(value)) {
    execution.unfollow();
    return settled(succeeded(decision, env, started, value, gateway), shape);
  }
  // The result's own promise, settled once: by the tool's outcome or, first, by its deadline. Returned as is,
  // so a caller's await is the one hop after the tool's (no promise chained between them).
  const result = new Promise<unknown>(capture);
  const deadline = deadlines.add(
    tool.metadata.timeoutMs ?? env.toolTimeoutMs,
    started,
    execution,
    decision,
    env,
    shape,
    gateway,
  );
  watch(value, deadline);
  return result;
}

/** A caller's own form of a result (see {@link execute}). */
type Shape = (result: ToolResult) => unknown;

/** A result known now, as its promise (shaped when asked: a shape that throws rejects it). */
export function settled(result: ToolResult, shape: Shape | null): Promise<unknown> {
  if (shape === null) return Promise.resolve(result);
  try {
    return Promise.resolve(shape(result));
  } catch (error) {
    return Promise.reject(error as Error);
  }
}

/**
 * Settles a running call's result with its tool's outcome: a promise's or a thenable's (whose `then` may
 * throw, call back twice, or pass a thenable on, as a promise's resolution would adopt it). A `then` per call,
 * no async function or await around it: the cheapest subscription (issue 25).
 */
function watch(value: PromiseLike<unknown>, deadline: Deadline): void {
  try {
    value.then(
      (outcome) => {
        // A deadline that fired already settled the result with its timeout: the late outcome is dropped, unannounced.
        if (!deadline.queued) return;
        if (isThenable(outcome)) watch(outcome, deadline);
        else finish(deadline, succeeded(deadline.decision, deadline.env, deadline.started, outcome, deadline.gateway));
      },
      (error: unknown) => {
        if (deadline.queued) finish(deadline, failed(deadline.decision, deadline.env, deadline.started, error));
      },
    );
  } catch (error) {
    if (deadline.queued) finish(deadline, failed(deadline.decision, deadline.env, deadline.started, error));
  }
}

function finish(deadline: Deadline, result: ToolResult, spare = true): void {
  if (!deadline.queued) return;
  deadlines.remove(deadline);
  deadline.execution.unfollow(spare);
  const shape = deadline.shape;
  if (shape === null) deadline.resolve(result);
  else
    try {
      deadline.resolve(shape(result));
    } catch (error) {
      deadline.reject(error);
    }
}

function succeeded(decision: AllowDecision, env: GateEnvironment, started: number, value: unknown, gateway: boolean) {
  executed(env, decision, 'ok', started);
  const { callId, tool } = decision;
  if (!gateway || typeof value === 'string' || value === undefined)
    return {
      callId,
      tool,
      status: 'ok',
      isError: false,
      content: contentOf(value),
      value,
      decision,
    } satisfies ToolResult;
  let text: string | undefined;
  return {
    callId,
    tool,
    status: 'ok',
    isError: false,
    get content(): string {
      return (text ??= shownOf(value));
    },
    set content(given: string) {
      text = given;
    },
    value,
    decision,
  } satisfies ToolResult;
}

const gatewayCalls = new WeakSet<GateContext>();

/**
 * Marks a gateway call's context: answered with a successful result's `value`, its `content` (a JSON.stringify
 * of the upstream's result) made only if read, then from the value as it is, never throwing; the tool of a
 * gateway call, if marked by `releasesSignal` (controller-pool.ts), may be handed a finished call's signal.
 * Every other route's results and signals are made as before.
 */
export function gatewayCall(context: GateContext): GateContext {
  gatewayCalls.add(context);
  return context;
}

function failed(decision: AllowDecision, env: GateEnvironment, started: number, error: unknown): ToolResult {
  executed(env, decision, 'error', started);
  return errorResult(decision, 'error', `Tool ${JSON.stringify(decision.tool)} failed: ${errorText(error)}`);
}

/** The `tool_executed` event; not even built when nobody listens. */
function executed(env: GateEnvironment, decision: AllowDecision, status: 'ok' | 'error', started: number): void {
  if (env.listening?.() === false) return;
  env.emit({
    type: 'tool_executed',
    callId: decision.callId,
    tool: decision.tool,
    status,
    durationMs: performance.now() - started,
  });
}

/** The error result of a refused call. */
export function refused(decision: DenyDecision): ToolResult {
  return errorResult(decision, 'refused', refusalContent(decision));
}

/** A result without a value: a call that failed as it ran, or was refused and never ran. */
function errorResult(decision: Decision, status: 'error' | 'refused', content: string): ToolResult {
  return { callId: decision.callId, tool: decision.tool, status, isError: true, content, decision };
}

/**
 * The order calls run in: grouped, consecutive concurrency-safe calls run together and any other call
 * waits for them and runs alone; not grouped, every call runs alone. An execution's promise never rejects (its
 * failure is an error result, never a throw), so a group can be awaited together.
 */
export class Lanes {
  readonly #grouped: boolean;
  #group: Promise<ToolResult>[] = [];

  constructor(grouped: boolean) {
    this.#grouped = grouped;
  }

  /** True when a call of this kind has to wait for the calls running now. */
  mustWait(concurrencySafe: boolean): boolean {
    return this.#group.length > 0 && !(this.#grouped && concurrencySafe);
  }

  /** Waits for the running group. */
  async drain(): Promise<void> {
    const group = this.#group;
    this.#group = [];
    await Promise.all(group);
  }

  /** Starts a call: together with the group, or alone (the caller awaits it before the next). */
  start(concurrencySafe: boolean, running: Promise<ToolResult>): void {
    if (this.#grouped && concurrencySafe) this.#group.push(running);
  }
}

/**
 * What a running tool receives beside its arguments. The AbortController is made when the tool first
 * reads `signal` (already aborted if the call was cancelled or timed out by then): making one for every
 * call cost microseconds, most tools never read it, and dispatching a no-op tool has a 3 µs budget
 * (bench/, issue 6).
 */
class Execution implements ToolExecution {
  readonly callId: string;
  #controller: AbortController | undefined;
  #aborted: { readonly reason: unknown } | undefined;
  #outer: AbortSignal | undefined;
  #listener: { handleEvent(): void } | undefined;
  readonly #reuse: boolean; // a gateway call of a pooling tool (controller-pool.ts): a finished one's controller may serve it

  constructor(callId: string, reuse: boolean) {
    this.callId = callId;
    this.#reuse = reuse;
  }

  /** Aborted when the dispatch's signal aborts, until {@link unfollow}. */
  follow(outer: AbortSignal): void {
    this.#outer = outer;
    this.#listener = { handleEvent: () => this.abort(outer.reason) };
    outer.addEventListener('abort', this.#listener, { once: true });
  }

  /** Settled: not aborted with the dispatch; a gateway call's controller kept for the next unless `spare` is false. */
  unfollow(spare = true): void {
    if (this.#outer && this.#listener) this.#outer.removeEventListener('abort', this.#listener);
    this.#outer = undefined;
    this.#listener = undefined;
    const controller = this.#controller;
    if (!spare || !this.#reuse || controller === undefined || this.#aborted) return;
    if (keepController(controller)) this.#controller = undefined;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = this.#reuse ? takeController() : new AbortController();
      if (this.#aborted) this.#controller.abort(this.#aborted.reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = { reason };
    this.#controller?.abort(reason);
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}

function contentOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** {@link contentOf} made later, where a throw would reach a reader that never expected one: never throws. */
function shownOf(value: unknown): string {
  try {
    return contentOf(value);
  } catch {
    return '[a value that cannot be shown as text]';
  }
}

/**
 * One running call's deadline in the shared queue, with what its result is built from: settled with the tool's
 * outcome or, at `at`, the timeout (whichever comes first; `queued` false once it is settled).
 */
interface Deadline {
  readonly at: number;
  /** The queue of its timeout length. */
  readonly queue: Queue;
  readonly execution: Execution;
  readonly decision: AllowDecision;
  readonly env: GateEnvironment;
  readonly started: number;
  readonly shape: Shape | null;
  readonly gateway: boolean;
  readonly resolve: (result: unknown) => void;
  readonly reject: (reason: unknown) => void;
  prev: Deadline | null;
  next: Deadline | null;
  /** Still in its queue: not settled yet. */
  queued: boolean;
}

let capturedResolve: (result: unknown) => void = () => {};
let capturedReject: (reason: unknown) => void = () => {};
// One executor for every result's promise (no closure made per call); it rejects only when a shape throws.
function capture(resolve: (result: unknown) => void, reject: (reason: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/** The deadlines of one timeout length, in the order they were set: their deadlines are in order too. */
class Queue {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs;
  }
  head: Deadline | null = null;
  tail: Deadline | null = null;
}

/**
 * Every running tool's deadline, in one structure with at most one timer: a queue per timeout length (its
 * deadlines come in order, so adding and removing cost O(1)), and one `setTimeout` armed for the earliest
 * head. The timer is left armed when a call finishes (it fires, finds the next deadline and is armed for it);
 * it holds the process open only while a deadline is queued, as a timer per call did: it is unref'd, and when
 * the event loop empties (`beforeExit`) with a deadline queued it is ref'd until the queue empties. Making it
 * ref'd when a call starts and unref'd when it ends cost two calls into Node's C++ per call where nothing else
 * holds a timer (issue 25).
 */
export class Deadlines {
  readonly #queues = new Map<number, Queue>();
  /** The queue a deadline was last added to (most calls share one timeout length): no Map look-up for it. */
  #last: Queue | null = null;
  #size = 0;
  #timer: NodeJS.Timeout | null = null;
  /** When the armed timer fires (performance.now() time). */
  #armedAt = Infinity;
  readonly #fire = (): void => this.#expire();
  /** The timer is ref'd: the loop emptied while a deadline was queued. */
  #held = false;
  #watching = false;
  /** At `beforeExit` (nothing else keeps the process): a queued deadline keeps it until it fires or is settled. */
  readonly #hold = (): void => {
    if (this.#size === 0 || this.#timer === null) return;
    this.#held = true;
    this.#timer.ref();
  };

  /** How many deadlines are queued (the tests). */
  get size(): number {
    return this.#size;
  }

  add(
    timeoutMs: number,
    now: number,
    execution: Execution,
    decision: AllowDecision,
    env: GateEnvironment,
    shape: Shape | null,
    gateway: boolean,
  ): Deadline {
    let queue = this.#last;
    if (queue === null || queue.timeoutMs !== timeoutMs) {
      let found = this.#queues.get(timeoutMs);
      if (found === undefined) this.#queues.set(timeoutMs, (found = new Queue(timeoutMs)));
      this.#last = queue = found;
    }
    const deadline: Deadline = {
      at: now + timeoutMs,
      queue,
      execution,
      decision,
      env,
      started: now,
      shape,
      gateway,
      resolve: capturedResolve,
      reject: capturedReject,
      prev: null,
      next: null,
      queued: true,
    };
    const tail = queue.tail;
    if (tail === null) queue.head = deadline;
    else {
      tail.next = deadline;
      deadline.prev = tail;
    }
    queue.tail = deadline;
    this.#size++;
    if (!this.#watching) {
      this.#watching = true;
      process.on('beforeExit', this.#hold);
    }
    if (deadline.at < this.#armedAt) this.#arm(deadline.at, now);
    return deadline;
  }

  remove(deadline: Deadline): void {
    if (!deadline.queued) return;
    deadline.queued = false;
    const queue = deadline.queue;
    const { prev, next } = deadline;
    if (prev === null) queue.head = next;
    else prev.next = next;
    if (next === null) queue.tail = prev;
    else next.prev = prev;
    deadline.prev = deadline.next = null;
    // The timer stays armed; with nothing queued it no longer holds the process open.
    if (--this.#size === 0 && this.#held) {
      this.#held = false;
      this.#timer?.unref();
    }
  }

  #arm(at: number, now: number): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#armedAt = at;
    // Never past Node's longest delay (2^31 - 1 ms): a longer one fires after 1 ms, and again, every millisecond.
    this.#timer = setTimeout(this.#fire, Math.min(Math.max(1, Math.ceil(at - now)), 2 ** 31 - 1));
    if (!this.#held) this.#timer.unref();
  }

  #expire(): void {
    this.#timer = null;
    this.#armedAt = Infinity;
    const now = performance.now();
    for (const [timeoutMs, queue] of this.#queues) {
      let head = queue.head;
      while (head !== null && head.at <= now) {
        const error = new Error(`the tool did not finish within ${timeoutMs} ms`);
        // Settled before the tool is aborted (a tool that settles on abort must not win), its controller not kept.
        finish(head, failed(head.decision, head.env, head.started, error), false);
        head.execution.abort(error);
        head = queue.head;
      }
    }
    // Read after every abort ran (an abort listener may have started another call).
    let next = Infinity;
    for (const [timeoutMs, queue] of this.#queues) {
      if (queue.head === null) {
        this.#queues.delete(timeoutMs);
        if (this.#last === queue) this.#last = null;
      } else if (queue.head.at < next) next = queue.head.at;
    }
    if (next !== Infinity && next < this.#armedAt) this.#arm(next, now);
  }
}

const deadlines = new Deadlines();

/** @internal The process's deadline queue (the tests count what it holds). */
export function deadlineQueue(): Deadlines {
  return deadlines;
}
