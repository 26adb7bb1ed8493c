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
import { Deadlines, type Timed, type Turn } from '../deadlines.js';
import { refusalContent } from './precheck.js';
import { Stamped } from '../stamps.js';

/**
 * Runs a decided call: its tool's execute with the frozen snapshot, under its timeout and the context's signal.
 * The tool is called before this returns (the fast path starts it without a microtask); a tool that returned
 * a plain value has finished, so its result is built at once and nothing is timed. A promise is watched under
 * the tool's deadline in the one shared {@link Deadlines} queue (no timer of its own per call, no clock read per
 * call: src/deadlines.ts).
 */
export function executeDecided(decided: DecidedCall, context: GateContext, env: GateEnvironment): Promise<ToolResult> {
  return execute(decided.tool, decided.decision, decided.args, context, env, null);
}

/**
 * {@link executeDecided} without the DecidedCall around its parts (the fast path has them apart), and with the slot
 * its tool's timeout as precheck's slot kept it (`keptTimeoutMs`, src/gate/slot-memo.ts: a number, or undefined for none;
 * null: read from the tool's metadata). With `shape`,
 * the promise settles with `shape(result)` instead (a caller's own form of the result, made in the same hop).
 */
export function execute(
  tool: Tool,
  decision: AllowDecision,
  args: Readonly<Record<string, unknown>>,
  context: GateContext,
  env: GateEnvironment,
  keptTimeoutMs: number | undefined | null,
): Promise<ToolResult>;
export function execute<R>(
  tool: Tool,
  decision: AllowDecision,
  args: Readonly<Record<string, unknown>>,
  context: GateContext,
  env: GateEnvironment,
  keptTimeoutMs: number | undefined | null,
  shape: (result: ToolResult) => R,
): Promise<R>;
export function execute(
  tool: Tool,
  decision: AllowDecision,
  args: Readonly<Record<string, unknown>>,
  context: GateContext,
  env: GateEnvironment,
  keptTimeoutMs: number | undefined | null,
  shape: Shape | null = null,
): Promise<unknown> {
  const gateway = gatewayMarked && GatewayMark.has(context);
  const execution = new Execution(decision.callId, gateway && pools(tool));
  const outer = context.signal;
  // The clock is read for the `tool_executed` event's duration only; a deadline reads the coarse one of src/deadlines.ts.
  const started = env.listening?.() === false ? -1 : performance.now();
  let value: unknown;
  if (outer) {
    if (outer.aborted)
      return settled(
        failed(decision, env, started, new Error('the dispatch was cancelled before the tool ran')),
        shape,
      );
    execution.follow(outer);
  }
  let thenable: boolean;
  try {
    value = tool.execute(args as Record<string, unknown>, execution);
    // Its `then` asked in here too: a value whose `then` getter throws is the tool's failure, never a throw of ours.
    thenable = isThenable(value);
  } catch (error) {
    execution.unfollow();
    return settled(failed(decision, env, started, error), shape);
  }
  if (!thenable) {
    execution.unfollow();
    return settled(succeeded(decision, env, started, value, gateway), shape);
  }
  // The result's own promise, settled once: by the tool's outcome or, first, by its deadline. Returned as is,
  // so a caller's await is the one hop after the tool's (no promise chained between them).
  let resolve!: (result: unknown) => void;
  let reject!: (reason: unknown) => void;
  // Its resolving functions taken by an executor of this call's own: a shared one storing them in module variables
  // cost more (two old-space stores of new objects per call, and its call was not inlined; issue 25).
  const result = new Promise<unknown>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  const deadline: Deadline = {
    turn: null,
    queue: null,
    prev: null,
    next: null,
    queued: true,
    execution,
    decision,
    env,
    started,
    shape,
    gateway,
    resolve,
    reject,
  };
  deadlines.add(deadline, (keptTimeoutMs !== null ? keptTimeoutMs : tool.metadata.timeoutMs) ?? env.toolTimeoutMs);
  watch(value as PromiseLike<unknown>, deadline);
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
 * no async function or await around it: the cheapest subscription (issue 25). Its callbacks are two shared
 * functions bound to the deadline: a closure made per call went through V8's lazy-compile stub on its one call
 * (~60 instructions a call, callgrind), a bound function calls its compiled target at once.
 */
function watch(value: PromiseLike<unknown>, deadline: Deadline): void {
  try {
    value.then(callbacks.fulfilled.bind(deadline), callbacks.rejected.bind(deadline));
  } catch (error) {
    if (deadline.queued)
      finish(deadline, failed(deadline.decision, deadline.env, deadline.started, error, deadline.turn));
  }
}

/**
 * {@link watch}'s callbacks, bound to its deadline. Methods, not function declarations: a method is no constructor
 * and has no `prototype`, nor has its bound function, so a tool's thenable calling `new onFulfilled()` gets a
 * TypeError, never an object whose `constructor` is the shared, unbound callback (which it could call on an object of
 * its making, taking deadlines out of the process's queue).
 */
const callbacks = {
  fulfilled(this: Deadline, outcome: unknown): void {
    // A deadline that fired already settled the result with its timeout: the late outcome is dropped, unannounced.
    if (!this.queued) return;
    if (isThenable(outcome)) watch(outcome, this);
    else finish(this, succeeded(this.decision, this.env, this.started, outcome, this.gateway, this.turn));
  },
  rejected(this: Deadline, error: unknown): void {
    if (this.queued) finish(this, failed(this.decision, this.env, this.started, error, this.turn));
  },
};

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

function succeeded(
  decision: AllowDecision,
  env: GateEnvironment,
  started: number,
  value: unknown,
  gateway: boolean,
  turn: Turn | null = null,
) {
  executed(env, decision, 'ok', started, turn);
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
      return (text ??= contentOf(value));
    },
    set content(given: string) {
      text = given;
    },
    value,
    decision,
  } satisfies ToolResult;
}

/**
 * The mark of a gateway call's context: a private field stamped on the context object (src/stamps.ts), not a
 * WeakSet of contexts (an ephemeron insert per call). A rule, handler or tool that sees a marked context can hand
 * on that very object (marked), never make a marked copy, Proxy or heir of it, nor mark an object of its own.
 */
class GatewayMark extends Stamped {
  readonly #gateway = true;

  static has(context: GateContext): boolean {
    return typeof context === 'object' && context !== null && #gateway in context;
  }
}

/** Whether any context was marked (no look-up per call in a process that never marked one). */
let gatewayMarked = false;

/**
 * Marks a gateway call's context: answered with a successful result's `value`, its `content` (a JSON.stringify
 * of the upstream's result) made only if read, then from the value as it is, never throwing; the tool of a
 * gateway call, if marked by `releasesSignal` (controller-pool.ts), may be handed a finished call's signal.
 * Every other route's results and signals are made as before.
 */
export function gatewayCall(context: GateContext): GateContext {
  if (!GatewayMark.has(context))
    try {
      new GatewayMark(context);
    } catch {
      // A context that takes no field (were V8 to refuse one on a non-extensible object): unmarked, as any route's.
      return context;
    }
  gatewayMarked = true;
  return context;
}

function failed(
  decision: AllowDecision,
  env: GateEnvironment,
  started: number,
  error: unknown,
  turn: Turn | null = null,
): ToolResult {
  executed(env, decision, 'error', started, turn);
  return errorResult(decision, 'error', `Tool ${JSON.stringify(decision.tool)} failed: ${errorText(error)}`);
}

/**
 * The `tool_executed` event; not even built when nobody listens. `started` is -1 for a call nobody timed: a running
 * call's start is then its turn's opening (`turn`, read only here: a double read per call boxed a number, 16 bytes).
 */
function executed(
  env: GateEnvironment,
  decision: AllowDecision,
  status: 'ok' | 'error',
  started: number,
  turn: Turn | null,
): void {
  if (env.listening?.() === false) return;
  env.emit({
    type: 'tool_executed',
    callId: decision.callId,
    tool: decision.tool,
    status,
    // A sync tool nobody timed (a listener came while it ran): 0; a running call's start is its turn's opening.
    durationMs: started >= 0 ? performance.now() - started : turn !== null ? performance.now() - turn.opened : 0,
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

/** A tool's value as the text a model is shown: a string as it is, anything else as JSON (else String); never throws. */
function contentOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    // Never throws: a value neither JSON nor String can show (a null-prototype object holding a BigInt, a toJSON and
    // a toString that throw) threw out of a call whose tool had run — an async tool's as an unhandled rejection.
    try {
      return String(value);
    } catch {
      return '[a value that cannot be shown as text]';
    }
  }
}

/**
 * One running call's deadline in the shared queue (src/deadlines.ts), with what its result is built from: settled
 * with the tool's outcome or, when it comes due, the timeout (whichever comes first; `queued` false once settled).
 */
interface Deadline extends Timed<Deadline> {
  readonly execution: Execution;
  readonly decision: AllowDecision;
  readonly env: GateEnvironment;
  /** When the call started (performance.now() time), or -1 when nobody listened then: its turn's opening. */
  readonly started: number;
  readonly shape: Shape | null;
  readonly gateway: boolean;
  readonly resolve: (result: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

const deadlines = new Deadlines<Deadline>((head, timeoutMs) => {
  const error = new Error(`the tool did not finish within ${timeoutMs} ms`);
  // Settled before the tool is aborted (a tool that settles on abort must not win), its controller not kept.
  finish(head, failed(head.decision, head.env, head.started, error, head.turn), false);
  head.execution.abort(error);
});

/** @internal The process's deadline queue (the tests count what it holds). */
export function deadlineQueue(): Deadlines<Deadline> {
  return deadlines;
}
