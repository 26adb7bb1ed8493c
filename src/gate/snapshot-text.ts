/**
 * The snapshot of arguments that arrived as JSON text (a model's call, issue 25): parseJsonText's object frozen in
 * place (snapshot.ts `freezeParsedArguments`: nobody else holds it and it holds only plain data), and a text met
 * again gets the object its first parse made ({@link snapshotText}'s memo).
 *
 * The memo is kept per **who asks** (the tenant's id and the caller's id, {@link partitionOf}): a hit costs a
 * fraction of a parse, so one process-wide memo let a caller tell by timing whether anyone else had recently sent
 * exactly a text it guessed (another tenant's query, path or account number). A partition is only ever answered
 * from the texts its own calls brought.
 */
import { parseJsonText } from '../json-text.js';
import { freezeParsedArguments } from './snapshot.js';

type Snapshot = Readonly<Record<string, unknown>>;

/** The longest text kept (UTF-16 units). */
const TEXT_LENGTH = 256;
/** Texts kept across all partitions: at most about half a megabyte of text (TEXTS × TEXT_LENGTH × 2 bytes). */
const TEXTS = 1024;
/**
 * Calls of a partition whose memo is not paying are parsed as if there were no memo, for this many of its calls;
 * twice as many after each further judgement that it is still not paying, up to {@link LONGEST_REST}. A probe (the
 * memo in use again until it is judged) keeps up to {@link TEXTS} texts and their snapshots alive, and those outlive
 * the young generation: with every text new (a model's calls), one probe per 8,192 calls was ~12 % of a one-call
 * executeToolCalls (same process, paired rounds, issue 25). Backing off makes that ~1 % for a partition that never
 * pays, and a partition that pays again is back at the first rest length.
 */
const REST = TEXTS * 8;
/** The longest rest: 16 times the first (131,072 of the partition's calls). */
const LONGEST_REST = REST * 16;
/** Partitions kept (the one emptied or made longest ago is forgotten first). */
const PARTITIONS = 64;

/** What one (tenant, caller) brought: its texts met again. */
interface Partition {
  readonly key: string;
  /** Its ids, copies of the first call's ({@link ownString}): what the last call's are compared with. */
  readonly tenant: string | undefined;
  readonly caller: string | undefined;
  texts: Map<string, Snapshot>;
  /** Calls answered by `texts` since it was last emptied. */
  hits: number;
  /** Calls of this partition left before its memo is used again (0: in use). */
  resting: number;
  /** The length of its next rest: {@link REST}, doubled by each rest in a row (the memo judged not paying again). */
  nextRest: number;
}

const partitions = new Map<string, Partition>();
/** Texts kept by all partitions together (at most TEXTS). */
let kept = 0;
// The partition of the last call: a steady caller is found without building its key. The ids are the
// partition's own copies, never a caller's string (which may hold a larger one alive: see ownString).
let lastTenant: string | undefined;
let lastCaller: string | undefined;
let last: Partition | null = null;

/**
 * The frozen snapshot of JSON text's object (parseJsonText's object frozen in place), or null when the text is not
 * JSON of an object (parseArguments refuses it, with its problem). Throws as freezeParsedArguments does (a
 * `"__proto__"` key).
 *
 * The same text always parses to an equal object (parseJsonText is a function of the text alone: duplicate keys,
 * numbers past a double, `"__proto__"` keys, escapes), and the snapshot is deep-frozen plain data that nothing
 * can change, so a text met again by the same tenant and caller gets the object its first parse made: not parsed
 * and frozen again. Short texts only, at most {@link TEXTS} of them across every partition: a full partition is
 * emptied whole, and when all partitions together are full the oldest one holding texts is emptied. A partition
 * whose memo is not paying (few texts met twice: every call's arguments differ) is set aside for a while, so
 * its calls pay no insert each. Text that throws or is not an object is never kept: it is parsed again each
 * time, and refused as before. `tenant` and `caller` are the context's ids; an id that is not a string (a host's
 * mistake) uses no memo at all.
 */
export function snapshotText(text: string, tenant?: unknown, caller?: unknown): Snapshot | null {
  const short = text.length <= TEXT_LENGTH;
  const partition = short ? partitionOf(tenant, caller) : null;
  if (partition === null) return parsed(text);
  const memo = partition.resting === 0;
  if (memo) {
    const hit = partition.texts.get(text);
    if (hit !== undefined) {
      partition.hits++;
      return hit;
    }
  } else partition.resting--;
  const snapshot = parsed(text);
  // A kept text is a flat copy: a slice of a model's completion would keep the whole completion alive.
  if (memo && snapshot !== null) remember(partition, flatCopy(text), snapshot);
  return snapshot;
}

/**
 * parseJsonText's object frozen in place, or null when the text is not JSON of an object. (Not `JSON.parse`: on
 * Node 24 it reads an escaped key as whatever an earlier parse of the process left, src/json-text.ts.)
 */
function parsed(text: string): Snapshot | null {
  let value: unknown;
  try {
    value = parseJsonText(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  return freezeParsedArguments(value as Record<string, unknown>);
}

/**
 * A copy of `text` that holds nothing else alive. V8 makes a slice of 13 or more units a view of its parent
 * (slice, substring, a regex capture: a call cut out of a completion or a stream buffer), and a view of a view
 * is a view of the first parent; `' ' + text` flattened is a new string of the text's own length and one.
 */
function flatCopy(text: string): string {
  return (' ' + text).slice(1);
}

/** The partition of a tenant and a caller (null: an id that is not a string, no partition). */
function partitionOf(tenant: unknown, caller: unknown): Partition | null {
  const t = tenant === undefined || tenant === null ? undefined : tenant;
  const c = caller === undefined || caller === null ? undefined : caller;
  if (last !== null && t === lastTenant && c === lastCaller) return last;
  if ((t !== undefined && typeof t !== 'string') || (c !== undefined && typeof c !== 'string')) return null;
  let partition = partitions.get(keyOf(t, c));
  if (partition === undefined) {
    if (partitions.size >= PARTITIONS) {
      const [oldest, forgotten] = partitions.entries().next().value as [string, Partition];
      kept -= forgotten.texts.size;
      partitions.delete(oldest);
    }
    // Kept under copies of the ids: an id V8 cut out of a longer string (a header, a token, a request body)
    // is a view that holds the whole of it alive, for as long as the partition lives.
    const tenant = t === undefined ? t : ownString(t);
    const caller = c === undefined ? c : ownString(c);
    const key = keyOf(tenant, caller);
    partition = { key, tenant, caller, texts: new Map(), hits: 0, resting: 0, nextRest: REST };
    partitions.set(key, partition);
  }
  lastTenant = partition.tenant;
  lastCaller = partition.caller;
  last = partition;
  return partition;
}

/** One key per pair, and only one pair per key: the tenant's length says where it ends. */
function keyOf(tenant: string | undefined, caller: string | undefined): string {
  return (tenant === undefined ? '-' : `${tenant.length}:${tenant}`) + (caller === undefined ? '-' : `:${caller}`);
}

/**
 * A copy of `id` that holds nothing else alive and is a flat string of its own (not {@link flatCopy}'s slice of
 * one: comparing the last call's ids with a slice cost a steady caller ~70 ns a call, twice the memo hit).
 * JSON.stringify and JSON.parse give back the same string, lone surrogates included.
 */
function ownString(id: string): string {
  return JSON.parse(JSON.stringify(id)) as string;
}

/**
 * A text read and kept in its partition. When all partitions together keep {@link TEXTS} texts, the oldest
 * partition holding texts (this one, if it is the only one) is emptied whole first ({@link empty}).
 */
function remember(partition: Partition, text: string, snapshot: Snapshot): void {
  if (kept >= TEXTS) {
    let victim = partition;
    for (const other of partitions.values())
      if (other !== partition && other.texts.size > 0) {
        victim = other;
        break;
      }
    empty(victim);
    if (partition.resting > 0) return;
  }
  partition.texts.set(text, snapshot);
  kept++;
}

/**
 * A partition's texts dropped. If it held enough texts to judge (a sixty-fourth of the bound) and fewer than one
 * in four was met again meanwhile, its memo was not paying, and is set aside for its next rest ({@link REST}, then
 * twice as long each time in a row, up to {@link LONGEST_REST}); if it was paying, its next rest is {@link REST} again.
 */
function empty(partition: Partition): void {
  const size = partition.texts.size;
  if (size >= TEXTS / 64) {
    if (partition.hits < size / 4) {
      partition.resting = partition.nextRest;
      partition.nextRest = Math.min(partition.nextRest * 2, LONGEST_REST);
    } else partition.nextRest = REST;
  }
  kept -= size;
  partition.texts = new Map();
  partition.hits = 0;
  // Last in line now, both to be emptied again and to be forgotten: the partitions take turns.
  partitions.delete(partition.key);
  partitions.set(partition.key, partition);
}

/** @internal The memo's state for a tenant and a caller (the tests): its texts, whether it is set aside, all texts kept. */
export function textMemo(
  tenant?: string,
  caller?: string,
): { readonly size: number; readonly resting: boolean; readonly kept: number; readonly partitions: number } {
  const partition = partitionOf(tenant, caller);
  return {
    size: partition?.texts.size ?? 0,
    resting: (partition?.resting ?? 0) > 0,
    kept,
    partitions: partitions.size,
  };
}
