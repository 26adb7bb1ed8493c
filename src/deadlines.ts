/**
 * Every deadline of a kind, in one structure with at most one timer (issue 25): the gate's running tools
 * (gate/execute.ts) and the gateway's held answers and raw requests (gateway/http-fast.ts, upstream-raw.ts) each
 * keep one. A queue per timeout length (its deadlines come in order, so adding and removing cost O(1)), one
 * `setTimeout` armed for the earliest head, and a coarse clock — one clock read per turn of the event loop, not one
 * per call.
 *
 * The coarse clock: a deadline belongs to the turn it was added in. A turn opens with a clock read (the first
 * deadline of a turn of the event loop), and closes with another when the callback that opened it and its
 * promise jobs are done (a `process.nextTick`, once per turn: Node runs it once the microtask queue is empty,
 * before the loop moves on; not a `setImmediate`, which cost the gateway a pass of the loop's check phase into
 * JS per `tools/call`, issue 25.2), after {@link TURN_CALLS} deadlines, or when the timer fires. Each of its
 * calls started between its opening and its closing, so each is due at the turn's close plus its timeout: never
 * early, and late by at most the time between the call's start and its turn's close — the rest of that turn of
 * the event loop (during which no timer could fire anyway) and at most {@link TURN_CALLS} calls started after it.
 * Reading the clock once per call cost ~40 ns of a ~650 ns `invoke`, more on a machine without a vDSO clock.
 */

/**
 * A turn of deadlines: opened and closed (Infinity while open) in performance.now() time. While it is open its
 * deadlines still running are linked in it (`head` to `tail`, in the order they were added), not in their queues:
 * they move there when it closes. A turn is a young object, a queue an old one: linking each call's deadline into
 * the queue cost two write barriers' slow path per call (issue 25).
 */
export interface Turn {
  readonly opened: number;
  closed: number;
  /** The shortest timeout of a deadline added in it: the first of them is due at `closed + shortest`. */
  shortest: number;
  count: number;
  /** The first and last of its deadlines still running while it is open (a Timed of the queue's kind). */
  head: unknown;
  tail: unknown;
}

/** What the queue keeps of a deadline (the caller's object carries its own fields besides). */
export interface Timed<D> {
  turn: Turn | null;
  queue: Queue<D> | null;
  prev: D | null;
  next: D | null;
  /** Still in its queue: not settled yet. */
  queued: boolean;
}

/** The deadlines of one timeout length, in the order they were set: their deadlines are in order too. */
export class Queue<D> {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs;
  }
  head: D | null = null;
  tail: D | null = null;
}

/**
 * The process's own `process.nextTick`, read when this module loads; null when a fake clock's was installed then (it
 * carries its `clock`, as @sinonjs/fake-timers' and vitest's fakes do): every turn's closer is then compared.
 */
const OWN_NEXT_TICK: typeof process.nextTick | null = 'clock' in process.nextTick ? null : process.nextTick;

/**
 * The turn closers of every {@link Deadlines} whose turn opened in this turn of the event loop, run by one
 * `process.nextTick` (issue 25.2: a gateway `tools/call` opens a turn in two queues, the gate's and its raw
 * request's, and each tick cost ~3.8k instructions on Node 20, whose tick object has computed symbol keys). In the
 * order they were added, each once; a closer added while another nextTick than the one scheduled is installed
 * schedules its own, which runs those still waiting too; a fake clock's nextTick is handed each closer on its own.
 */
const closers: (() => void)[] = [];
let closersTick: typeof process.nextTick | null = null;

function closeAfterTurn(close: () => void): void {
  const tick = process.nextTick;
  // A fake clock's nextTick (it carries its `clock`) may drop what it holds while it stays installed (its reset,
  // vi.clearAllTimers): a closer sharing a tick handed to it before would never run. Each is handed its own.
  if (tick !== OWN_NEXT_TICK && 'clock' in tick) return tick(close);
  closers.push(close);
  if (closersTick === tick) return;
  closersTick = tick;
  tick(runClosers);
}

/**
 * Runs the closers due, each even when one before it threw (a closer not run leaves its Deadlines' turn open: its
 * deadlines reach their queues only when the timer fires). What they threw is thrown once all ran, from this tick,
 * as an uncaught exception is when each has a tick of its own: the one error as it is, several in an AggregateError.
 */
function runClosers(): void {
  closersTick = null;
  const due = closers.splice(0, closers.length);
  let errors: unknown[] | null = null;
  for (const close of due) {
    try {
      close();
    } catch (error) {
      (errors ??= []).push(error);
    }
  }
  if (errors !== null)
    throw errors.length === 1 ? errors[0] : new AggregateError(errors, `${errors.length} turn closers threw`);
}

/** How many deadlines a turn takes before it is closed and another opened (one clock read per this many). */
export const TURN_CALLS = 1024;

/** How a {@link Deadlines} treats the process. */
export interface DeadlinesOptions {
  /**
   * A queued deadline keeps the process open when nothing else does, as a timer per call would (a tool's
   * timeout must still fire and abort it). False: the timer never holds the process (the gateway's deadlines
   * wait on a socket that holds it, or on nothing any more).
   * @default true
   */
  readonly holdProcess?: boolean;
}

/**
 * The queues and their timer. The timer is left armed when a call finishes (it fires, finds the next deadline and
 * is armed for it); it holds the process open only while a deadline is queued, as a timer per call did: it is
 * unref'd, and when the event loop empties (`beforeExit`) with a deadline queued it is ref'd until the queue
 * empties (unless `holdProcess` is false). Making it ref'd when a call starts and unref'd when it ends cost two
 * calls into Node's C++ per call where nothing else holds a timer.
 */
export class Deadlines<D extends Timed<D>> {
  readonly #queues = new Map<number, Queue<D>>();
  /** The queue a deadline was last added to (most calls share one timeout length): no Map look-up for it. */
  #last: Queue<D> | null = null;
  #size = 0;
  #timer: NodeJS.Timeout | null = null;
  /** When the armed timer fires (performance.now() time). */
  #armedAt = Infinity;
  /**
   * When the armed timer fires on its own clock: `#armedAt`, or sooner when that is past Node's longest delay
   * (the timer then fires early, finds nothing due, and is armed again for the rest).
   */
  #firesAt = Infinity;
  readonly #fire = (): void => this.#expire();
  /** The turn deadlines are added to now, or null. */
  #turn: Turn | null = null;
  /**
   * The `process.nextTick` that will close the open turn, or null. Another than the one now (fake timers
   * installed or uninstalled since: its callback may never run) counts as none: the turn is closed at the next add —
   * unless it is the process's own ({@link OWN_NEXT_TICK}), which calls back whatever was installed since.
   */
  #closing: typeof process.nextTick | null = null;
  /** The `clearTimeout` of the `setTimeout` the timer was armed with (a fake clock's, perhaps), and that setTimeout. */
  #clear: typeof clearTimeout = clearTimeout;
  #armedWith: typeof setTimeout | null = null;
  #armedFake = false;
  /** The `performance` the queued turns' times were read on. */
  #clock: typeof performance = performance;
  readonly #close = (): void => {
    this.#closing = null;
    // Read on the clock the queued turns were read on: a fake clock's `performance` installed since (and advanced)
    // would close the turn at a time the queue is never rebased from (#open rebases only a turn opened under it).
    if (this.#turn !== null) this.#closeTurn(this.#clock.now(), true);
  };
  /** The timer is ref'd: the loop emptied while a deadline was queued. */
  #held = false;
  /** Whether the first deadline was seen (the `beforeExit` listener added when `holdProcess`). */
  #watching = false;
  readonly #holdProcess: boolean;
  /** At `beforeExit` (nothing else keeps the process): a queued deadline keeps it until it fires or is settled. */
  readonly #hold = (): void => {
    if (this.#size === 0 || this.#timer === null) return;
    this.#held = true;
    this.#timer.ref();
  };
  /** Settles a deadline that came due (it is still queued; the callback removes it). */
  readonly #expired: (deadline: D, timeoutMs: number) => void;

  /** `expired` is told of a deadline that came due while still queued: it must remove it (see {@link remove}). */
  constructor(expired: (deadline: D, timeoutMs: number) => void, options: DeadlinesOptions = {}) {
    this.#expired = expired;
    this.#holdProcess = options.holdProcess ?? true;
  }

  /** How many deadlines are queued (the tests). */
  get size(): number {
    return this.#size;
  }

  /**
   * Queues `deadline` (its Timed fields are set here) to come due `timeoutMs` after the call started: linked in the
   * open turn until it closes, then in the queue of its timeout length.
   */
  add(deadline: D, timeoutMs: number): void {
    // The rare branches (another timeout length, the first deadline ever, a new turn) are methods of their own:
    // add() and remove() stay small enough for V8 to inline them into execute.ts's hot path (callgrind, issue 25).
    let queue = this.#last;
    if (queue === null || queue.timeoutMs !== timeoutMs) queue = this.#queueOf(timeoutMs);
    let turn = this.#turn;
    // The process's own nextTick always calls back: `process` (a dictionary-mode object) is read only when the turn's
    // closer is another (a fake clock's), whose callback may never run once it is uninstalled.
    const closing = this.#closing;
    if (turn === null || turn.count >= TURN_CALLS || (closing !== OWN_NEXT_TICK && closing !== process.nextTick))
      turn = this.#open(timeoutMs);
    turn.count++;
    if (timeoutMs < turn.shortest) turn.shortest = timeoutMs;
    deadline.turn = turn;
    deadline.queue = queue;
    deadline.queued = true;
    const tail = turn.tail as D | null;
    if (tail === null) turn.head = deadline;
    else {
      tail.next = deadline;
      deadline.prev = tail;
    }
    turn.tail = deadline;
    this.#size++;
    if (!this.#watching) this.#watch();
  }

  /** The queue of a timeout length other than the last one's (made when first needed). */
  #queueOf(timeoutMs: number): Queue<D> {
    let found = this.#queues.get(timeoutMs);
    if (found === undefined) this.#queues.set(timeoutMs, (found = new Queue<D>(timeoutMs)));
    this.#last = found;
    return found;
  }

  /** From the first deadline on: a deadline queued when the event loop empties holds the process (`#hold`). */
  #watch(): void {
    this.#watching = true;
    if (this.#holdProcess) process.on('beforeExit', this.#hold);
  }

  /** Takes `deadline` out of its queue (settled in time: it is never told); nothing when it left already. */
  remove(deadline: D): void {
    if (!deadline.queued) return;
    deadline.queued = false;
    const { prev, next } = deadline;
    const turn = deadline.turn!;
    // Still linked in its turn (open: only the open one is), else in its queue.
    const list: { head: unknown; tail: unknown } = turn.closed === Infinity ? turn : deadline.queue!;
    if (prev === null) list.head = next;
    else prev.next = next;
    if (next === null) list.tail = prev;
    else next.prev = prev;
    deadline.prev = deadline.next = null;
    // The timer stays armed; with nothing queued it no longer holds the process open.
    if (--this.#size === 0 && this.#held) this.#release();
  }

  #release(): void {
    this.#held = false;
    this.#timer?.unref();
  }

  /** A new turn, the open one (full) closed by the same clock read; closed in turn when the loop moves on. */
  #open(timeoutMs: number): Turn {
    const clock = performance;
    const now = clock.now();
    if (this.#turn !== null) this.#closeTurn(now, true);
    if (clock !== this.#clock) this.#rebase(clock, now);
    const turn: Turn = { opened: now, closed: Infinity, shortest: Infinity, count: 0, head: null, tail: null };
    this.#turn = turn;
    if (this.#closing !== process.nextTick) {
      this.#closing = process.nextTick;
      closeAfterTurn(this.#close);
      if (this.#turn !== turn) this.#reopen(turn, timeoutMs, now);
    }
    // No timer armed (the first turn after the queue emptied): armed now for this deadline, so a turn whose closer
    // never calls back (a nextTick replaced, taken for the process's own) is still closed when it fires (#expire).
    if (this.#timer === null) this.#arm(now + timeoutMs, now);
    return turn;
  }

  /**
   * A nextTick that called back at once (user code's) closed `turn` before its first deadline was linked in it, and a
   * deadline linked in a closed turn would never reach its queue: it is opened again, to be closed by a microtask
   * (still this turn of the event loop). Were that at once too, nothing closes it but the next add or the timer.
   */
  #reopen(turn: Turn, timeoutMs: number, now: number): void {
    this.#turn = turn;
    turn.closed = Infinity;
    queueMicrotask(this.#close);
    if (this.#turn === turn) {
      this.#closing = process.nextTick;
      return;
    }
    this.#turn = turn;
    turn.closed = Infinity;
    this.#closing = null;
    if (now + timeoutMs < this.#armedAt) this.#arm(now + timeoutMs, now);
  }

  /** Closes the open turn at `now`: its deadlines are due from now on; the timer armed for its first if sooner. */
  #closeTurn(now: number, arm: boolean): void {
    const turn = this.#turn!;
    this.#turn = null;
    turn.closed = now;
    // Its deadlines still running go to their queues, in the order they were added (after every deadline of the turns
    // before: the queues stay in order of when their deadlines are due).
    let deadline = turn.head as D | null;
    turn.head = turn.tail = null;
    while (deadline !== null) {
      const next = deadline.next;
      const queue = deadline.queue!;
      const tail = queue.tail;
      deadline.next = null;
      deadline.prev = tail;
      if (tail === null) queue.head = deadline;
      else tail.next = deadline;
      queue.tail = deadline;
      deadline = next;
    }
    const at = now + turn.shortest;
    // A timer armed with another setTimeout than the global one now (a fake clock's), or with a fake clock's (whose
    // timers a test may clear, vi.clearAllTimers: the timer is gone, the queue would wait for it), may never fire:
    // armed again. The real clock's timer is left as it is.
    if (!arm) return;
    if ((this.#armedFake || this.#armedWith !== setTimeout) && this.#timer !== null)
      this.#arm(Math.min(at, this.#armedAt), now);
    else if (at < this.#armedAt) this.#arm(at, now);
  }

  /**
   * `performance` is another object than the queued turns were read on (fake timers installed or uninstalled):
   * their times mean nothing on it, and a queue would no longer be in order. Every queued deadline is due its
   * whole timeout from now (never early), and the timer armed again on the clock of now.
   */
  #rebase(clock: typeof performance, now: number): void {
    this.#clock = clock;
    let next = Infinity;
    for (const queue of this.#queues.values()) {
      if (queue.head !== null && now + queue.timeoutMs < next) next = now + queue.timeoutMs;
      for (let deadline = queue.head; deadline !== null; deadline = deadline.next) deadline.turn!.closed = now;
    }
    if (this.#timer !== null) this.#clear(this.#timer);
    this.#timer = null;
    this.#armedAt = Infinity;
    if (next !== Infinity) this.#arm(next, now);
  }

  #arm(at: number, now: number): void {
    if (this.#timer !== null) this.#clear(this.#timer);
    this.#armedAt = at;
    this.#armedWith = setTimeout;
    this.#armedFake = 'clock' in setTimeout;
    this.#clear = clearTimeout;
    // Never past Node's longest delay (2^31 - 1 ms): a longer one fires after 1 ms, and again, every millisecond.
    const delay = Math.max(1, Math.ceil(at - now));
    this.#firesAt = delay > 2 ** 31 - 1 ? now + 2 ** 31 - 1 : at;
    this.#timer = setTimeout(this.#fire, Math.min(delay, 2 ** 31 - 1));
    if (!this.#held) this.#timer.unref();
  }

  #expire(): void {
    // A fake clock's timer fired (sinon's and vitest's carry their `clock`): its time has come on that clock,
    // whatever `performance` says (only setTimeout faked) — the time it was armed for, not the deadline beyond
    // Node's longest delay. A real timer's firing is checked against the clock.
    const now = this.#armedFake ? Math.max(performance.now(), this.#firesAt) : performance.now();
    this.#timer = null;
    this.#armedAt = Infinity;
    // The loop moved on: the open turn's calls all started before now.
    if (this.#turn !== null) this.#closeTurn(now, false);
    // Due deadlines in the order they came due, across the queues (the loop held up past several lengths' heads:
    // the shortest length's first, not the first length queued). Each queue is in due order already; the heads
    // are merged. A deadline of a turn opened meanwhile (an abort listener started a call) is in its turn until it
    // closes, never in a queue, so the queues due are known before the first abort runs.
    const due: [number, Queue<D>][] = [];
    for (const entry of this.#queues)
      if (entry[1].head !== null && entry[1].head.turn!.closed + entry[0] <= now) due.push(entry);
    while (due.length > 0) {
      let first = 0;
      let firstAt = Infinity;
      for (let i = 0; i < due.length; i++) {
        const [timeoutMs, queue] = due[i]!;
        const head = queue.head;
        const at = head === null ? Infinity : head.turn!.closed + timeoutMs;
        if (at > now) {
          due.splice(i--, 1);
          continue;
        }
        if (at < firstAt) {
          first = i;
          firstAt = at;
        }
      }
      if (firstAt === Infinity) break;
      const [timeoutMs, queue] = due[first]!;
      this.#expired(queue.head!, timeoutMs);
    }
    // Read after every abort ran (an abort listener may have started another call).
    let next = Infinity;
    // An empty queue is dropped, unless a turn opened meanwhile holds deadlines (they may be of its length, and move to
    // it when the turn closes).
    const open = this.#turn;
    const keep = open !== null && open.head !== null;
    for (const [timeoutMs, queue] of this.#queues) {
      if (queue.head === null) {
        if (keep) continue;
        this.#queues.delete(timeoutMs);
        if (this.#last === queue) this.#last = null;
      } else if (queue.head.turn!.closed + timeoutMs < next) next = queue.head.turn!.closed + timeoutMs;
    }
    if (next !== Infinity && next < this.#armedAt) this.#arm(next, now);
  }
}

/** A deadline told by its own `expire()` once it passes, unless removed before (the gateway's). */
export interface Expiring<D> extends Timed<D> {
  expire(): void;
}

/**
 * A {@link Deadlines} whose deadlines are told with their own `expire()`, each taken out of its queue first,
 * one's failure not keeping the others from expiring; its timer never holds the process (the gateway's held
 * answers and raw requests wait on a socket, which does).
 */
export function expiringDeadlines<D extends Expiring<D>>(): Deadlines<D> {
  const deadlines: Deadlines<D> = new Deadlines<D>(
    (deadline) => {
      deadlines.remove(deadline);
      try {
        deadline.expire();
      } catch {
        // one deadline's failure does not keep the others from expiring
      }
    },
    { holdProcess: false },
  );
  return deadlines;
}
