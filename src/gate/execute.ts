/**
 * Step 7: executes an allowed call with the snapshot it was decided on — a timeout per tool, the dispatch's
 * abort signal, and concurrency grouping (consecutive concurrency-safe calls together, any other call
 * alone). A throw or a timeout is an error result; nothing here throws. Only dispatch.ts calls it.
 */
import type { DenyDecision } from '../decision.js';
import { errorText } from '../permissions/handler.js';
import type { ToolExecution } from '../tool.js';
import type { GateContext, GateEnvironment, ToolResult } from '../contracts/gate.js';
import type { DecidedCall } from '../contracts/route.js';
import { refusalContent } from './precheck.js';

/** Runs a decided call: its tool's execute with the frozen snapshot, under its timeout and the context's signal. */
export async function executeDecided(
  decided: DecidedCall,
  context: GateContext,
  env: GateEnvironment,
): Promise<ToolResult> {
  const { tool, args, decision } = decided;
  const timeoutMs = tool.metadata.timeoutMs ?? env.toolTimeoutMs;
  const execution = new Execution(decision.callId);
  const outer = context.signal;
  const onAbort = (): void => execution.abort(outer?.reason);
  outer?.addEventListener('abort', onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const started = performance.now();
  try {
    if (outer?.aborted) throw new Error('the dispatch was cancelled before the tool ran');
    let value: unknown = tool.execute(args as Record<string, unknown>, execution);
    // A tool that returned a plain value has finished: there is nothing left to time out.
    if (isThenable(value)) {
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const error = new Error(`the tool did not finish within ${timeoutMs} ms`);
          // Reject before aborting: a tool that settles on abort must not win the race and look successful.
          reject(error);
          execution.abort(error);
        }, timeoutMs);
      });
      value = await Promise.race([value, timedOut]);
    }
    env.emit({
      type: 'tool_executed',
      callId: decision.callId,
      tool: decision.tool,
      status: 'ok',
      durationMs: performance.now() - started,
    });
    return {
      callId: decision.callId,
      tool: decision.tool,
      status: 'ok',
      isError: false,
      content: contentOf(value),
      value,
      decision,
    };
  } catch (error) {
    env.emit({
      type: 'tool_executed',
      callId: decision.callId,
      tool: decision.tool,
      status: 'error',
      durationMs: performance.now() - started,
    });
    return {
      callId: decision.callId,
      tool: decision.tool,
      status: 'error',
      isError: true,
      content: `Tool ${JSON.stringify(decision.tool)} failed: ${errorText(error)}`,
      decision,
    };
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onAbort);
  }
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

  constructor(callId: string) {
    this.callId = callId;
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
