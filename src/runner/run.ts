/**
 * A live run as the runner keeps it between two awaits: a stack of frames (the root agent first, the
 * innermost delegation last), the tally, and the transcript of each frame. Internal: a paused run leaves
 * the process as a RunState (state.ts), never as these objects.
 */
import { hashOf } from '../crypto.js';
import type { Decision, DenyDecision } from '../decision.js';
import type { Emitter } from '../events.js';
import { parseJsonText } from '../json-text.js';
import type { GateContext, ToolSource } from '../contracts/gate.js';
import type { Limits } from './options.js';
import { readCall, type NormalizedCall, type UnreadableCall } from '../formats/index.js';
import { describe } from '../names.js';
import type { Tool } from '../tool.js';
import type { CallKey, Settled } from './ledger.js';
import type {
  BudgetCap,
  GrantedAnswer,
  PendingApproval,
  RunEvent,
  RunEventBase,
  RunEventMap,
  RunEventType,
  RunIdentity,
  RunMessage,
  RunTally,
  RunToolCall,
  ToolMessage,
} from './types.js';

/** The calls of one model turn of a frame, and how far the turn got. */
export interface Turn {
  readonly index: number;
  readonly calls: readonly RunToolCall[];
  /** Final results, by call id. */
  readonly done: Map<string, ToolMessage>;
  /** The delegation call whose peer frame is running, or null. */
  active: string | null;
  /**
   * Answers to asks made in this turn, by call id, with the binding they answered. A call decided again
   * after a delegation reuses its answer only for the same binding; everything else is decided afresh.
   */
  answered: Map<
    string,
    { readonly binding: string; readonly under: readonly unknown[]; readonly effect: 'allow' | 'deny' }
  > | null;
}

/** One agent's place in the delegation stack. */
export interface Frame {
  readonly agent: string;
  readonly key: string;
  readonly depth: number;
  /** Append-only: the model is handed this array itself, never a copy (a run costs linear time in its turns). */
  readonly messages: RunMessage[];
  /** Model turns of this frame so far (the assistant messages in `messages`). */
  turns: number;
  turn: Turn | null;
  /** Decisions given on resume and not yet used, by call id. */
  readonly granted: Map<string, GrantedAnswer>;
  /**
   * The frame's last context, kept while its tenant array (by identity) stays (`viewOf`, route.ts): the gate
   * checks a plain array's entries against its snapshot at every call, so a plan changed in place still applies
   * at the next call; a resolved allowlist below the root is resolved again only for a new array.
   */
  view: {
    readonly tenant: readonly string[] | null;
    readonly context: GateContext;
    readonly view: FrameView;
  } | null;
  /** The constant head of this frame's ledger keys and the key asked for last (`ledgerKeyOf`), made at its first call. */
  ledgerHead: LedgerHead | null;
}

/** What the gate is given for one dispatch of a frame: the context, the tools, and the run's limits. */
export interface FrameView {
  readonly context: GateContext;
  /** The registry with this frame's `agent:<peer>` tools in front of it. */
  readonly source: ToolSource;
  readonly limits: Limits;
}

/** The ledger keys of a frame: the text of `[runId, tenant, callerId, frame.key` and the last key made. */
interface LedgerHead {
  readonly run: Run;
  readonly text: string;
  turn: Turn | null;
  callId: string;
  last: CallKey | null;
}

/** What a run has spent, as the run counts it (the store holds the tally every continuation shares). */
export type Tally = { -readonly [K in keyof RunTally]: RunTally[K] };

export interface Run extends RunIdentity {
  readonly signal: AbortSignal | undefined;
  readonly tally: Tally;
  /** Refused-call repetitions, by a hash of agent, canonical tool and arguments. */
  readonly loops: Map<string, number>;
  readonly decisions: Decision[];
  readonly frames: Frame[];
  pending: PendingApproval[];
  /** The `agent:<peer>` tools of each agent, built once per run. */
  readonly peerTools: Map<string, PeerTools>;
  /**
   * The run's tally key and scope tag (`tallyKeyOf`, `scopeOf`), made at first use: fields of the run, not
   * WeakMap entries (an entry keyed by a short-lived object costs every scavenge of the heap).
   */
  readonly keys: { tally: string | null; scope: string | null };
}

export interface PeerTools {
  /** By canonical name. */
  readonly tools: Map<string, Tool>;
  /** Canonical tool name → peer agent name. */
  readonly agents: Map<string, string>;
  /** The registry with these tools in front of it (the gate's `withTools`), made at the first dispatch. */
  source: ToolSource | null;
}

export type Ended =
  | { readonly kind: 'ended'; readonly status: 'failed'; readonly error: Error }
  | { readonly kind: 'ended'; readonly status: 'budget_exceeded'; readonly cap: BudgetCap }
  | { readonly kind: 'ended'; readonly status: 'refusal_loop'; readonly decision: DenyDecision };
export type FrameOutcome = { readonly kind: 'completed'; readonly text: string } | { readonly kind: 'paused' } | Ended;

export function newFrame(agent: string, key: string, depth: number, input: string): Frame {
  return {
    agent,
    key,
    depth,
    messages: [Object.freeze({ role: 'user', content: input })],
    turns: 0,
    turn: null,
    granted: new Map(),
    view: null,
    ledgerHead: null,
  };
}

export function newTurn(index: number, calls: readonly RunToolCall[]): Turn {
  // `answered` is made at the first answer to an ask (most turns ask nobody).
  return { index, calls, done: new Map(), active: null, answered: null };
}

/** Sends a run event with the run's base fields. */
export function emitRun<T extends RunEventType>(
  events: Emitter<RunEvent>,
  run: Run,
  frame: Frame,
  event: Omit<RunEventMap[T], keyof RunEventBase> & { readonly type: T },
): void {
  if (events.size === 0) return;
  const base: RunEventBase = { runId: run.runId, agent: frame.agent, tenant: run.tenant, path: pathOf(run, frame) };
  events.emit({ ...base, ...event } as unknown as RunEvent);
}

/**
 * The ledger key of a call: the run identity (run id, tenant, caller id; the root agent heads `frame.key`),
 * the frame, the turn and the call id. A run id is the caller's to choose (a conversation id): another tenant
 * or caller naming the same one has keys of its own, so its calls are decided by the gate, never answered
 * with this run's rows.
 */
export function ledgerKeyOf(run: Run, frame: Frame, turn: Turn, callId: string): CallKey {
  // The text of JSON.stringify([runId, tenant, callerId, frame.key, turn.index, callId]), its constant head
  // made once per frame (keys stored by earlier versions and other processes are the same strings).
  let head = frame.ledgerHead;
  if (head === null || head.run !== run) {
    head = {
      run,
      text: JSON.stringify([run.runId, run.tenant, run.caller.id, frame.key]).slice(0, -1),
      turn: null,
      callId: '',
      last: null,
    };
    frame.ledgerHead = head;
  }
  // The key asked for last is asked again (found before the dispatch, then claimed and recorded): the same
  // object, so a store's map hashes its string once.
  if (head.last !== null && head.turn === turn && head.callId === callId) return head.last;
  head.turn = turn;
  head.callId = callId;
  head.last = { key: `${head.text},${turn.index},${JSON.stringify(callId)}]`, scope: scopeOf(run) };
  return head.last;
}

/** The tally store's key of a run: its run id, tenant, caller id and root agent (every continuation shares it). */
export function tallyKeyOf(run: Run): string {
  return (run.keys.tally ??= JSON.stringify([run.runId, run.tenant, run.caller.id, run.root]));
}

/** A short tag of the run identity (run id, tenant, caller id, root agent), kept in each ledger row's owner. */
export function scopeOf(run: Run): string {
  return (run.keys.scope ??= hashOf(['toolgate.run-scope', tallyKeyOf(run)]).slice(0, 24));
}

/** Answers a call from the ledger: the recorded outcome, or "unknown" for one that never settled. */
export function answerFromLedger(turn: Turn, call: RunToolCall, found: Settled): void {
  if (found.state === 'settled')
    turn.done.set(call.id, toolMessage(call, found.outcome.content, found.outcome.isError));
  else turn.done.set(call.id, toolMessage(call, unknownOutcome(call), true));
}

/** Appends the turn's results in call order (calls that never ran get a note) and leaves the turn. */
export function closeTurn(frame: Frame, turn: Turn, note: string): void {
  for (const call of turn.calls)
    frame.messages.push(turn.done.get(call.id) ?? toolMessage(call, `Tool call not run: ${note}.`, true));
  frame.turn = null;
  frame.granted.clear();
}

export function isAllowlistRefusal(
  decision: Decision,
): decision is DenyDecision & { layer: NonNullable<DenyDecision['layer']> } {
  return decision.effect === 'deny' && (decision.stage === 'allowlist' || decision.stage === 'lookup');
}

/** A transcript call as the gate reads it. */
export function readable(call: RunToolCall): NormalizedCall | UnreadableCall {
  if (call.problem !== undefined) return { id: call.id, name: call.name, format: 'toolgate', problem: call.problem };
  return { id: call.id, name: call.name, arguments: call.arguments, format: 'toolgate' };
}

export function pathOf(run: Run, frame: Frame): string[] {
  const path: string[] = [];
  for (let i = 0; i <= frame.depth; i++) path.push(run.frames[i]!.agent);
  return path;
}

export function toolMessage(call: RunToolCall, content: string, isError: boolean): ToolMessage {
  return Object.freeze({ role: 'tool', callId: call.id, tool: call.name, content, isError });
}

function unknownOutcome(call: RunToolCall): string {
  return `Tool ${JSON.stringify(call.name)} was started by an earlier continuation of this run and its outcome is unknown; it is not run again.`;
}

/** Reads a model response; a malformed one throws (the run fails). Duplicate call ids in one turn are refused, not merged. */
export function readResponse(response: unknown): { text: string | null; calls: readonly RunToolCall[] } {
  if (typeof response !== 'object' || response === null)
    throw new TypeError(`the model returned ${describe(response)}; expected { text?, toolCalls? }`);
  const { text, toolCalls } = response as { text?: unknown; toolCalls?: unknown };
  if (text !== undefined && typeof text !== 'string')
    throw new TypeError(`the model returned text ${describe(text)}; expected a string`);
  if (toolCalls !== undefined && !Array.isArray(toolCalls))
    throw new TypeError(`the model returned toolCalls ${describe(toolCalls)}; expected an array`);
  const calls: RunToolCall[] = [];
  const raws = (toolCalls ?? []) as readonly unknown[];
  // One call cannot repeat an id: the set is made for two or more.
  const ids = raws.length > 1 ? new Set<string>() : null;
  // The next suffix to try for each repeated id: k repeats of one id take ~k look-ups, not k²/2 (atk-longkeys).
  const suffixes = new Map<string, number>();
  for (const raw of raws) {
    const call = readCall(raw);
    let id = call.id;
    let problem = 'problem' in call ? call.problem : undefined;
    if (ids?.has(id)) {
      let n = suffixes.get(call.id) ?? 2;
      while (ids.has(`${call.id}~${n}`)) n++;
      suffixes.set(call.id, n + 1);
      id = `${call.id}~${n}`;
      problem = `the call id ${JSON.stringify(call.id)} is used twice in one turn`;
    }
    ids?.add(id);
    const args = 'arguments' in call ? (call.arguments as unknown) : null;
    calls.push(
      Object.freeze(
        problem === undefined
          ? { id, name: call.name, arguments: jsonSafe(args) }
          : { id, name: call.name, arguments: null, problem },
      ),
    );
  }
  return { text: text ?? null, calls: Object.freeze(calls) };
}

/** The raw arguments as JSON carries them (the transcript goes into the RunState). */
export function jsonSafe(value: unknown): unknown {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return {};
  try {
    // A getter or proxy trap that throws lands in the catch, as it did in the round trip.
    const copy = plainCopy(value, 0);
    if (copy !== NOT_PLAIN) return copy;
    return parseJsonText(JSON.stringify(value ?? {}));
  } catch {
    return String(value);
  }
}

const NOT_PLAIN = Symbol('not plain');
const MAX_PLAIN_DEPTH = 8;

/**
 * What `JSON.parse(JSON.stringify(value))` gives, without the text, for plain data: objects and arrays of their
 * own prototypes (no `toJSON`, no `__proto__` key), strings, booleans, null and finite numbers (-0 as 0), at
 * most 8 deep. Anything else (undefined, functions, bigints, NaN, class instances, deeper data, a cycle) is
 * NOT_PLAIN, and the JSON round trip decides it.
 */
function plainCopy(value: unknown, depth: number): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value + 0 : NOT_PLAIN;
  if (typeof value !== 'object' || depth >= MAX_PLAIN_DEPTH || 'toJSON' in value) return NOT_PLAIN;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return NOT_PLAIN;
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++) {
      const item = plainCopy(value[i], depth + 1);
      if (item === NOT_PLAIN) return NOT_PLAIN;
      out.push(item);
    }
    return out;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return NOT_PLAIN;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (key === '__proto__') return NOT_PLAIN;
    const item = plainCopy((value as Record<string, unknown>)[key], depth + 1);
    if (item === NOT_PLAIN) return NOT_PLAIN;
    out[key] = item;
  }
  return out;
}
