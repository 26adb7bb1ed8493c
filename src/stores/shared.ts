/**
 * What every store implementation shares: argument checks, the status of a pending request, reading rows
 * back, the audit query's bounds. Internal: not exported from an entry point.
 */
import { parseJsonText } from '../json-text.js';
import { MAX_WINDOW_MS } from '../limits/rules.js';
import { describe } from '../names.js';
import type {
  Answer,
  CounterCharge,
  LedgerEntry,
  LedgerReservation,
  AuditQuery,
  AuditRecord,
  LedgerOutcome,
  LedgerQuery,
  LedgerSettlement,
  LedgerSettlementRecord,
  PendingRecord,
  PendingStatus,
  RememberedAnswer,
  BudgetCap,
  RunCaps,
  RunSpend,
} from './types.js';

/** Throws a TypeError naming `what` unless `value` is a non-empty string. */
export function requireKey(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string' || value.length === 0)
    throw new TypeError(`${what} must be a non-empty string, got ${describe(value)}`);
}

/** Throws a TypeError naming `what` unless `value` is a finite number >= `min`. */
export function requireNumber(value: unknown, what: string, min = 0): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min)
    throw new TypeError(`${what} must be a finite number >= ${min}, got ${describe(value)}`);
}

/** A table or key prefix: letters, digits and underscores (it is spliced into SQL). */
export function requireIdentifier(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,40}$/.test(value))
    throw new TypeError(`${what} must be letters, digits and underscores (at most 41), got ${describe(value)}`);
}

/** The status of a stored request now: a pending one past its expiry reads as expired. */
export function statusAt(stored: PendingStatus, expiresAt: number, now: number): PendingStatus {
  return stored === 'pending' && now > expiresAt ? 'expired' : stored;
}

/** Checks an answer before any store records it: a malformed answer is refused, never stored. */
export function checkAnswer(answer: Answer): Answer {
  if (typeof answer !== 'object' || answer === null || (answer.effect !== 'allow' && answer.effect !== 'deny'))
    throw new TypeError(`an answer must be { effect: 'allow' | 'deny', … }, got ${describe(answer)}`);
  return answer;
}

/** Checks a pending record before it is stored. */
export function checkPending(pending: PendingRecord): void {
  if (typeof pending !== 'object' || pending === null)
    throw new TypeError(`a pending record must be an object, got ${describe(pending)}`);
  requireKey(pending.id, 'a pending record\'s "id"');
  requireNumber(pending.expiresAt, 'a pending record\'s "expiresAt"');
  requireNumber(pending.createdAt, 'a pending record\'s "createdAt"');
}

/** A remembered answer read back from storage, or undefined when the row is not one. */
export function readRemembered(value: unknown): RememberedAnswer | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if ((v['answer'] !== 'allow' && v['answer'] !== 'deny') || (v['scope'] !== 'run' && v['scope'] !== 'session'))
    return undefined;
  if (typeof v['mac'] !== 'string') return undefined;
  return Object.freeze({
    answer: v['answer'],
    scope: v['scope'],
    mac: v['mac'],
    ...(typeof v['approver'] === 'string' ? { approver: v['approver'] } : {}),
  });
}

/** The plain copy of a remembered answer that is written. */
export function rememberedRow(answer: RememberedAnswer): RememberedAnswer {
  const row = readRemembered(answer);
  if (!row)
    throw new TypeError(
      `a remembered answer must be { answer, scope: 'run' | 'session', mac }, got ${describe(answer)}`,
    );
  return row;
}

/** A ledger outcome read back from storage; an unreadable one is null (the call's outcome is unknown). */
export function readOutcome(value: unknown): LedgerOutcome | null {
  if (typeof value === 'string') {
    try {
      value = parseJsonText(value);
    } catch {
      return null;
    }
  }
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  if (typeof v['content'] !== 'string' || typeof v['isError'] !== 'boolean') return null;
  return Object.freeze({ content: v['content'], isError: v['isError'] });
}

/** Checks an outcome before it is recorded. */
export function outcomeRow(outcome: LedgerOutcome): LedgerOutcome {
  const row = readOutcome(outcome);
  if (!row)
    throw new TypeError(`a ledger outcome must be { content: string, isError: boolean }, got ${describe(outcome)}`);
  return row;
}

/** An audit query with its bounds as epoch ms and its limit applied. */
export interface AuditBounds {
  readonly tenant: string | undefined;
  readonly caller: string | undefined;
  readonly tool: string | undefined;
  readonly effect: 'allow' | 'deny' | undefined;
  readonly since: number | undefined;
  readonly until: number | undefined;
  readonly limit: number;
}

/** Reads an {@link AuditQuery}, throwing a TypeError naming a bad field. */
export function auditBounds(query: AuditQuery = {}): AuditBounds {
  const time = (value: string | number | undefined, what: string): number | undefined => {
    if (value === undefined) return undefined;
    const ms = typeof value === 'number' ? value : Date.parse(value);
    if (!Number.isFinite(ms))
      throw new TypeError(`audit query "${what}" must be ISO 8601 or epoch ms, got ${describe(value)}`);
    return ms;
  };
  const limit = query.limit ?? 1000;
  requireNumber(limit, 'audit query "limit"', 1);
  if (query.effect !== undefined && query.effect !== 'allow' && query.effect !== 'deny')
    throw new TypeError(`audit query "effect" must be 'allow' or 'deny', got ${describe(query.effect)}`);
  return {
    tenant: query.tenant,
    caller: query.caller,
    tool: query.tool,
    effect: query.effect,
    since: time(query.since, 'since'),
    until: time(query.until, 'until'),
    limit: Math.floor(limit),
  };
}

/** Whether a record falls within the query. */
export function auditMatches(record: AuditRecord, q: AuditBounds): boolean {
  const d = record.decision;
  if (q.tenant !== undefined && d.tenant !== q.tenant) return false;
  if (q.caller !== undefined && record.caller !== q.caller) return false;
  if (q.tool !== undefined && d.canonical !== q.tool) return false;
  if (q.effect !== undefined && d.effect !== q.effect) return false;
  if (q.since !== undefined || q.until !== undefined) {
    const at = Date.parse(record.time);
    if (q.since !== undefined && !(at >= q.since)) return false;
    if (q.until !== undefined && !(at < q.until)) return false;
  }
  return true;
}

/** The last `limit` of the matching records, oldest first. */
export function lastMatching(records: Iterable<AuditRecord>, q: AuditBounds): AuditRecord[] {
  const out: AuditRecord[] = [];
  for (const r of records) if (auditMatches(r, q)) out.push(r);
  return out.length > q.limit ? out.slice(out.length - q.limit) : out;
}

/** What a reservation attempt finds in an existing row (every store answers through this one function). */
export function reservationOf(
  row: Pick<LedgerEntry, 'owner' | 'reservedAt' | 'leaseUntil' | 'outcome' | 'recordedAt'>,
  now: number,
): LedgerReservation {
  if (row.recordedAt !== null) {
    // A recorded row whose outcome cannot be read is still never run again: it reads as unknown.
    return row.outcome
      ? { state: 'settled', outcome: row.outcome }
      : { state: 'unknown', owner: row.owner, since: row.reservedAt };
  }
  if (now < row.leaseUntil) return { state: 'held', owner: row.owner, until: row.leaseUntil };
  return { state: 'unknown', owner: row.owner, since: row.reservedAt };
}

/** Checks a counter call's charges (every store). */
export function checkCharges(charges: readonly CounterCharge[]): void {
  if (!Array.isArray(charges) || charges.length === 0)
    throw new TypeError(`consume expects a non-empty array of charges, got ${describe(charges)}`);
  for (const c of charges) {
    requireKey(c?.key, 'a charge\'s "key"');
    requireNumber(c.cost, 'a charge\'s "cost"');
    requireNumber(c.limit, 'a charge\'s "limit"');
    requireNumber(c.windowMs, 'a charge\'s "windowMs"', 1);
    if (c.windowMs > MAX_WINDOW_MS)
      throw new TypeError(`a charge's "windowMs" must be at most ${MAX_WINDOW_MS} (1000 years), got ${c.windowMs}`);
  }
}

/** When `need` of the oldest cost will have left the window; null when the cost can never fit. */
export function retryAfter(
  entries: readonly { readonly at: number; readonly cost: number }[],
  need: number,
  windowMs: number,
  now: number,
  cost: number,
  limit: number,
): number | null {
  if (cost > limit) return null;
  let freed = 0;
  for (const e of entries) {
    freed += e.cost;
    if (freed >= need) return Math.max(1, e.at + windowMs - now + 1);
  }
  return null;
}

type Row = Readonly<Record<string, unknown>>;

/** A pending record from a stored row (any SQL store); undefined when the row cannot be read. */
export function pendingOf(row: Row, now: number): PendingRecord | undefined {
  try {
    const record = (typeof row['record'] === 'string' ? parseJsonText(row['record']) : row['record']) as Omit<
      PendingRecord,
      'status' | 'answer' | 'answeredAt'
    >;
    const rawAnswer = row['answer'];
    const answer = (typeof rawAnswer === 'string' ? parseJsonText(rawAnswer) : (rawAnswer ?? null)) as Answer | null;
    const answeredAt =
      row['answered_at'] === null || row['answered_at'] === undefined ? null : Number(row['answered_at']);
    const expiresAt = Number(row['expires_at']);
    return Object.freeze({
      ...record,
      createdAt: Number(row['created_at']),
      expiresAt,
      status: statusAt(row['status'] as PendingStatus, expiresAt, now),
      answer,
      answeredAt,
    });
  } catch {
    return undefined;
  }
}

/** A ledger entry from a stored row (any SQL store). */
export function ledgerEntryOf(row: Row): LedgerEntry {
  const recordedAt =
    row['recorded_at'] === null || row['recorded_at'] === undefined ? null : Number(row['recorded_at']);
  return entryWith(
    {
      key: String(row['key']),
      owner: String(row['owner']),
      reservedAt: Number(row['reserved_at']),
      leaseUntil: Number(row['lease_until']),
      outcome: recordedAt === null ? null : readOutcome(row['outcome']),
      recordedAt,
    },
    row['outcome'],
  );
}

/** `entry` frozen, with the operator's settlement read from its stored outcome where there is one (every store). */
export function entryWith(entry: LedgerEntry, storedOutcome: unknown): LedgerEntry {
  const settlement = entry.recordedAt === null ? null : readSettlement(storedOutcome, entry.recordedAt);
  return Object.freeze(settlement ? { ...entry, settlement } : entry);
}

/** A ledger query checked, with `since` as epoch ms (every store's `list`). */
export function ledgerQueryOf(query: LedgerQuery = {}): {
  readonly unknown: boolean;
  readonly since: number | undefined;
  readonly limit: number;
} {
  if (typeof query !== 'object' || query === null)
    throw new TypeError(`a ledger query must be an object, got ${describe(query)}`);
  if (query.unknown !== undefined && typeof query.unknown !== 'boolean')
    throw new TypeError(`ledger query "unknown" must be a boolean, got ${describe(query.unknown)}`);
  const since =
    query.since === undefined ? undefined : typeof query.since === 'number' ? query.since : Date.parse(query.since);
  if (since !== undefined && !Number.isFinite(since))
    throw new TypeError(`ledger query "since" must be ISO 8601 or epoch ms, got ${describe(query.since)}`);
  const limit = query.limit ?? 1000;
  requireNumber(limit, 'ledger query "limit"', 1);
  return { unknown: query.unknown === true, since, limit: Math.floor(limit) };
}

/**
 * What `settle` writes as the row's outcome: the text the model is answered with from now on (the call is
 * never run again either way) and the settlement itself, which `inspect` and `list` read back.
 */
export function settledOutcome(
  settlement: LedgerSettlement,
): LedgerOutcome & { readonly settlement: LedgerSettlement } {
  if (typeof settlement !== 'object' || settlement === null)
    throw new TypeError(`a settlement must be { outcome: 'ran' | 'not-run', by }, got ${describe(settlement)}`);
  const { outcome, by, note } = settlement;
  if (outcome !== 'ran' && outcome !== 'not-run')
    throw new TypeError(`a settlement's "outcome" must be 'ran' or 'not-run', got ${describe(outcome)}`);
  requireKey(by, 'a settlement\'s "by"');
  if (note !== undefined && typeof note !== 'string')
    throw new TypeError(`a settlement's "note" must be a string, got ${describe(note)}`);
  const why = note ? `: ${note}` : '';
  return {
    content:
      outcome === 'ran'
        ? `The call ran; its result was not recorded (an operator, ${by}, settled it as run${why}). Do not make it again.`
        : `The call did not run (an operator, ${by}, settled it as not run${why}). Make it again if it is still needed.`,
    isError: outcome === 'not-run',
    settlement: { outcome, by, ...(note ? { note } : {}) },
  };
}

/** The settlement inside a stored outcome, or null (a worker's own record). */
function readSettlement(value: unknown, at: number): LedgerSettlementRecord | null {
  if (typeof value === 'string') {
    try {
      value = parseJsonText(value);
    } catch {
      return null;
    }
  }
  const s = (value as { settlement?: Record<string, unknown> } | null)?.settlement;
  if (typeof s !== 'object' || s === null) return null;
  if ((s['outcome'] !== 'ran' && s['outcome'] !== 'not-run') || typeof s['by'] !== 'string') return null;
  return Object.freeze({
    outcome: s['outcome'],
    by: s['by'],
    ...(typeof s['note'] === 'string' ? { note: s['note'] } : {}),
    at,
  });
}

/**
 * A run's tally after charging `add` to `stored` (raised to `floor` first), or the cap the charge would pass
 * (then nothing is charged): the one rule of every TallyStore. A charge of a call (`attempts` > 0) is checked
 * against `maxToolCalls` and `maxCost`, a charge of a model turn (`iterations` > 0) against `maxIterations`.
 */
export function charged(
  stored: RunSpend | undefined,
  add: RunSpend,
  caps: RunCaps,
  floor: RunSpend,
): { readonly total: RunSpend; readonly cap: BudgetCap | null } {
  const base: RunSpend = {
    iterations: Math.max(stored?.iterations ?? 0, floor.iterations),
    attempts: Math.max(stored?.attempts ?? 0, floor.attempts),
    cost: Math.max(stored?.cost ?? 0, floor.cost),
  };
  const next: RunSpend = {
    iterations: base.iterations + add.iterations,
    attempts: base.attempts + add.attempts,
    cost: base.cost + add.cost,
  };
  let cap: BudgetCap | null = null;
  if (add.iterations > 0 && next.iterations > caps.maxIterations) cap = 'maxIterations';
  else if (add.attempts > 0 && next.attempts > caps.maxToolCalls) cap = 'maxToolCalls';
  else if (add.attempts > 0 && next.cost > caps.maxCost) cap = 'maxCost';
  return { total: cap === null ? next : base, cap };
}
