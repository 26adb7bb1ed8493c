import { describe } from '../names.js';
import type { ToolMetadata } from '../tool.js';
import type { PermissionResult } from './result.js';

/** What a handler is asked when a rule answers `ask`. */
export interface PermissionRequest {
  /** The tool's declared name. */
  readonly toolName: string;
  /** The validated arguments the call would run with. */
  readonly parameters: Readonly<Record<string, unknown>>;
  /** The matched rule's reason. */
  readonly reason: string;
  /** The matched rule's name. */
  readonly ruleName: string;
  /** The tool's metadata. */
  readonly metadata: ToolMetadata;
  /** The call's id, and who is asking (for handlers that show or remember it). */
  readonly callId: string;
  readonly agent: string;
  readonly tenant: string | null;
  readonly runId: string | null;
  /** The caller's id (the context's `caller.id`), or null: a person may not answer their own request (four eyes). */
  readonly caller?: string | null;
}

/** What a handler may answer. Anything else (including `ask`) is treated as `deny`. */
export type HandlerAnswer = PermissionResult | Promise<PermissionResult>;

/**
 * Decides an `ask`: an object with `handle(request)` or a plain function, synchronous or asynchronous.
 * A handler that throws, rejects, times out or answers anything but `allow`/`deny` denies the call.
 */
export type PermissionHandler =
  { handle(request: PermissionRequest): HandlerAnswer } | ((request: PermissionRequest) => HandlerAnswer);

export function isPermissionHandler(value: unknown): value is PermissionHandler {
  return (
    typeof value === 'function' ||
    (typeof value === 'object' && value !== null && typeof (value as { handle?: unknown }).handle === 'function')
  );
}

/**
 * Any handler shape `callHandler` can call: a {@link PermissionHandler}, or a route's person whose answers
 * the caller interprets more widely (an Answer, or `pending`).
 */
export type AnyHandler<Request = PermissionRequest> =
  { handle(request: Request): unknown } | ((request: Request) => unknown);

/** How a handler's call ended: its answer, or the failure that denies. */
export type HandlerOutcome<Value> =
  | { readonly value: Value; readonly failure?: never }
  | { readonly value?: never; readonly failure: 'threw' | 'timeout' | 'invalid'; readonly detail: string };

/**
 * Calls a handler, failing closed: any error or a timeout → a failure; an answer other than allow/deny →
 * an `invalid` failure, unless `raw` (the caller reads the answer itself).
 */
export async function callHandler(
  handler: AnyHandler,
  request: PermissionRequest,
  timeoutMs: number,
): Promise<HandlerOutcome<'allow' | 'deny'>>;
export async function callHandler<Request>(
  handler: AnyHandler<Request>,
  request: Request,
  timeoutMs: number,
  options: { readonly raw: true },
): Promise<HandlerOutcome<unknown>>;
export async function callHandler<Request>(
  handler: AnyHandler<Request>,
  request: Request,
  timeoutMs: number,
  options: { readonly raw?: boolean } = {},
): Promise<HandlerOutcome<unknown>> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const pending = Promise.resolve().then(() =>
      typeof handler === 'function' ? handler(request) : handler.handle(request),
    );
    const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), timeoutMs);
    });
    const answer: unknown = await Promise.race([pending, timeout]);
    if (answer === TIMED_OUT) {
      pending.catch(() => undefined); // a late rejection must not become an unhandled one
      return {
        failure: 'timeout',
        detail: `the permission handler did not answer within ${timeoutMs} ms`,
      };
    }
    if (options.raw === true || answer === 'allow' || answer === 'deny') return { value: answer };
    return {
      failure: 'invalid',
      detail: `the permission handler answered ${describe(answer)}; expected 'allow' or 'deny'`,
    };
  } catch (error) {
    return { failure: 'threw', detail: `the permission handler failed: ${errorText(error)}` };
  } finally {
    clearTimeout(timer);
  }
}

const TIMED_OUT = Symbol('timed out');

export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return describe(error);
}
