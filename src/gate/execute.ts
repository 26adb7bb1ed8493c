/**
 * Step 7: executes an allowed call with the snapshot it was decided on — a timeout per tool, the dispatch's
 * abort signal, and concurrency grouping (consecutive concurrency-safe calls together, any other call
 * alone). A throw or a timeout is an error result; nothing here throws. Only dispatch.ts calls it.
 */
import type { AllowDecision, DenyDecision } from '../decision.js';
import { errorText } from '../permissions/handler.js';
import type { ToolExecution } from '../tool.js';
import type { GateContext, GateEnvironment, ToolResult } from '../contracts/gate.js';
import type { DecidedCall } from '../contracts/route.js';
import { refusalContent } from './precheck.js';

/**
 * Runs a decided call: its tool's execute with the frozen snapshot, under its timeout and the context's signal.
 * The tool is called before this returns (the fast path starts it without a microtask); a tool that returned
 * a plain value has finished, so its result is built at once and nothing is timed. A promise is awaited under
 * the tool's deadline in the one shared {@link Deadlines} queue (no timer of its own per call).
 */
export function executeDecided(decided: DecidedCall, context: GateContext, env: GateEnvironment): Promise<ToolResult> {
  const tool = decided.tool;
  const decision = decided.decision;
  const execution = new Execution(decision.callId);
  const outer = context.signal;
  const started = performance.now();
  let value: unknown;
  if (outer) {
    if (outer.aborted)
      return Promise.resolve(
        failed(decision, env, started, new Error('the dispatch was cancelled before the tool ran')),
      );
    execution.follow(outer);
  }
  try {
    value = tool.execute(decided.args as Record<string, unknown>, execution);
  } catch (error) {
    execution.unfollow();
    return Promise.resolve(failed(decision, env, started, error));
  }
  if (!isThenable(value)) {
    execution.unfollow();
    return Promise.resolve(succeeded(decision, env, started, value));
  }
  return settle(value, execution, tool.metadata.timeoutMs ?? env.toolTimeoutMs, decision, env, started);
}

/** A tool's promise awaited under its deadline: the deadline rejects before it aborts the tool, so a tool that settles on abort cannot look successful. */
async function settle(
  value: PromiseLike<unknown>,
  execution: Execution,
  timeoutMs: number,
  decision: AllowDecision,
  env: GateEnvironment,
  started: number,
): Promise<ToolResult> {
  const deadline = deadlines.add(timeoutMs, started, execution);
  try {
    value.then(deadline.resolve, deadline.reject);
    return succeeded(decision, env, started, await deadline.promise);
  } catch (error) {
    return failed(decision, env, started, error);
  } finally {
    deadlines.remove(deadline);
    execution.unfollow();
  }
}

function succeeded(decision: AllowDecision, env: GateEnvironment, started: number, value: unknown): ToolResult {
  executed(env, decision, 'ok', started);
  return {
    callId: decision.callId,
    tool: decision.tool,
    status: 'ok',
    isError: false,
    content: contentOf(value),
    value,
    decision,
  };
}

function failed(decision: AllowDecision, env: GateEnvironment, started: number, error: unknown): ToolResult {
  executed(env, decision, 'error', started);
  return {
    callId: decision.callId,
    tool: decision.tool,
    status: 'error',
    isError: true,
    content: `Tool ${JSON.stringify(decision.tool)} failed: ${errorText(error)}`,
    decision,
  };
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
  return {
    callId: decision.callId,
    tool: decision.tool,
    status: 'refused',
    isError: true,
    content: refusalContent(decision),
    decision,
  };
}

/**
 * The order calls run in: grouped, consecutive concurrency-safe calls run together and any other call
 * waits for them and runs alone; not grouped, every call runs alone. `settle` never rejects (an execution
 * is an error result, never a throw), so a group can be awaited together.
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

  constructor(callId: string) {
    this.callId = callId;
  }

  /** Aborted when the dispatch's signal aborts, until {@link unfollow}. */
  follow(outer: AbortSignal): void {
    this.#outer = outer;
    this.#listener = { handleEvent: () => this.abort(outer.reason) };
    outer.addEventListener('abort', this.#listener, { once: true });
  }

  unfollow(): void {
    if (this.#outer && this.#listener) this.#outer.removeEventListener('abort', this.#listener);
    this.#outer = undefined;
    this.#listener = undefined;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
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

/** One call's deadline in the shared queue: settles its promise with the tool's outcome or, at `at`, the timeout. */
interface Deadline {
  readonly at: number;
  readonly timeoutMs: number;
  readonly execution: Execution;
  readonly promise: Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
  prev: Deadline | null;
  next: Deadline | null;
  /** Still in its queue. */
  queued: boolean;
}

let capturedResolve: (value: unknown) => void = () => {};
let capturedReject: (reason: unknown) => void = () => {};
// One executor for every deadline's promise (no closure made per call).
function capture(resolve: (value: unknown) => void, reject: (reason: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/** The deadlines of one timeout length, in the order they were set: their deadlines are in order too. */
class Queue {
  head: Deadline | null = null;
  tail: Deadline | null = null;
}

/**
 * Every running tool's deadline, in one structure with at most one timer: a queue per timeout length (its
 * deadlines come in order, so adding and removing cost O(1)), and one `setTimeout` armed for the earliest
 * head. The timer is left armed when a call finishes (it fires, finds the next deadline and is armed for it);
 * it holds the process open only while a deadline is queued, as a timer per call did.
 */
export class Deadlines {
  readonly #queues = new Map<number, Queue>();
  #size = 0;
  #timer: NodeJS.Timeout | null = null;
  /** When the armed timer fires (performance.now() time). */
  #armedAt = Infinity;
  readonly #fire = (): void => this.#expire();

  /** How many deadlines are queued (the tests). */
  get size(): number {
    return this.#size;
  }

  add(timeoutMs: number, now: number, execution: Execution): Deadline {
    const promise = new Promise<unknown>(capture);
    const deadline: Deadline = {
      at: now + timeoutMs,
      timeoutMs,
      execution,
      promise,
      resolve: capturedResolve,
      reject: capturedReject,
      prev: null,
      next: null,
      queued: true,
    };
    let queue = this.#queues.get(timeoutMs);
    if (queue === undefined) this.#queues.set(timeoutMs, (queue = new Queue()));
    const tail = queue.tail;
    if (tail === null) queue.head = deadline;
    else {
      tail.next = deadline;
      deadline.prev = tail;
    }
    queue.tail = deadline;
    if (this.#size++ === 0) this.#timer?.ref();
    if (deadline.at < this.#armedAt) this.#arm(deadline.at, now);
    return deadline;
  }

  remove(deadline: Deadline): void {
    if (!deadline.queued) return;
    deadline.queued = false;
    const queue = this.#queues.get(deadline.timeoutMs)!;
    const { prev, next } = deadline;
    if (prev === null) queue.head = next;
    else prev.next = next;
    if (next === null) queue.tail = prev;
    else next.prev = prev;
    deadline.prev = deadline.next = null;
    // The timer stays armed; with nothing queued it no longer holds the process open.
    if (--this.#size === 0) this.#timer?.unref();
  }

  #arm(at: number, now: number): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#armedAt = at;
    this.#timer = setTimeout(this.#fire, Math.max(1, Math.ceil(at - now)));
    if (this.#size === 0) this.#timer.unref();
  }

  #expire(): void {
    this.#timer = null;
    this.#armedAt = Infinity;
    const now = performance.now();
    for (const [timeoutMs, queue] of this.#queues) {
      let head = queue.head;
      while (head !== null && head.at <= now) {
        this.remove(head);
        const error = new Error(`the tool did not finish within ${timeoutMs} ms`);
        // Reject before aborting: a tool that settles on abort must not win the race and look successful.
        head.reject(error);
        head.execution.abort(error);
        head = queue.head;
      }
    }
    // Read after every abort ran (an abort listener may have started another call).
    let next = Infinity;
    for (const [timeoutMs, queue] of this.#queues) {
      if (queue.head === null) this.#queues.delete(timeoutMs);
      else if (queue.head.at < next) next = queue.head.at;
    }
    if (next !== Infinity && next < this.#armedAt) this.#arm(next, now);
  }
}

const deadlines = new Deadlines();

/** @internal The process's deadline queue (the tests count what it holds). */
export function deadlineQueue(): Deadlines {
  return deadlines;
}
