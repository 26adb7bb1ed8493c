/**
 * The snapshot of arguments that arrived as JSON text (a model's call, issue 25): JSON.parse's object frozen in
 * place (snapshot.ts `freezeParsedArguments`: nobody else holds it and it holds only plain data), with two
 * shortcuts that give the very same object:
 *
 * - a flat object of strings, numbers, booleans and nulls (most arguments a model sends) is read here, without
 *   JSON.parse: JSON.parse spent most of its time on the keys (internalising each), and a caller's calls repeat
 *   their keys, so keys met before are taken as they were kept ({@link Shape}); any other text, or anything here
 *   not certain, is left to JSON.parse;
 * - a text met again gets the object its first read made ({@link snapshotText}'s memo).
 *
 * Both are kept per **who asks** (the tenant's id and the caller's id, {@link partitionOf}): a memo hit costs a
 * fraction of a read, so one process-wide memo let a caller tell by timing whether anyone else had recently sent
 * exactly a text it guessed (another tenant's query, path or account number). A partition is only ever answered
 * from the texts and keys its own calls brought.
 */
import { freezeParsedArguments } from './snapshot.js';

type Snapshot = Readonly<Record<string, unknown>>;

/** The longest text kept, and read without JSON.parse (UTF-16 units). */
const TEXT_LENGTH = 256;
/**
 * The longest text read without JSON.parse. Its keys are what the reader saves; a long value is scanned a
 * character at a time here, faster by JSON.parse past this (a path or a query as a value: ~30 % slower here).
 */
const FLAT_LENGTH = 64;
/** Texts kept across all partitions: at most about half a megabyte of text (TEXTS × TEXT_LENGTH × 2 bytes). */
const TEXTS = 1024;
/** Calls of a partition whose memo is not paying are parsed as if there were no memo, for this many of its calls. */
const REST = TEXTS * 8;
/** Partitions kept (the oldest is forgotten first); each holds at most SHAPES key lists of at most KEYS keys. */
const PARTITIONS = 64;
const SHAPES = 4;
const KEYS = 16;

/** The keys of a flat object, in text order, each the internalised string a property key is. */
interface Shape {
  readonly keys: readonly string[];
}

/** What one (tenant, caller) brought: its texts met again, and the key lists its flat objects had. */
interface Partition {
  readonly key: string;
  texts: Map<string, Snapshot>;
  /** Calls answered by `texts` since it was last emptied. */
  hits: number;
  /** Calls of this partition left before its memo is used again (0: in use). */
  resting: number;
  /** The key lists met last, newest first. */
  readonly shapes: Shape[];
}

const partitions = new Map<string, Partition>();
/** Texts kept by all partitions together (at most TEXTS). */
let kept = 0;
// The partition of the last call: a steady caller is found without building its key.
let lastTenant: string | undefined;
let lastCaller: string | undefined;
let last: Partition | null = null;

/**
 * The frozen snapshot of JSON text's object (JSON.parse's object frozen in place, or an equal one built here),
 * or null when the text is not JSON of an object (parseArguments refuses it, with its problem). Throws as
 * freezeParsedArguments does (a `"__proto__"` key).
 *
 * The same text always parses to an equal object (JSON.parse is a function of the text alone: duplicate keys,
 * numbers past a double, `"__proto__"` keys, escapes), and the snapshot is deep-frozen plain data that nothing
 * can change, so a text met again by the same tenant and caller gets the object its first read made: not read
 * and frozen again. Short texts only, at most {@link TEXTS} of them across every partition: a full partition is
 * emptied whole, and when all partitions together are full the oldest one holding texts is emptied. A partition
 * whose memo is not paying (few texts met twice: every call's arguments differ) is set aside for a while, so
 * its calls pay no insert each. Text that throws or is not an object is never kept: it is parsed again each
 * time, and refused as before. `tenant` and `caller` are the context's ids; an id that is not a string (a host's
 * mistake) uses no memo and no kept keys at all.
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
    // A kept text is a flat copy (a slice of a model's completion would keep the whole completion alive), and the
    // snapshot is read from the copy, so no string in it is a slice of anything larger either.
    text = flatCopy(text);
  } else partition.resting--;
  const snapshot = (text.length <= FLAT_LENGTH ? readFlat(text, partition, memo) : undefined) ?? parsed(text);
  if (memo && snapshot !== null) remember(partition, text, snapshot);
  return snapshot;
}

/** JSON.parse's object frozen in place, or null when the text is not JSON of an object. */
function parsed(text: string): Snapshot | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
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
  // One key per pair, and only one pair per key: the tenant's length says where it ends.
  const key = (t === undefined ? '-' : `${t.length}:${t}`) + (c === undefined ? '-' : `:${c}`);
  let partition = partitions.get(key);
  if (partition === undefined) {
    if (partitions.size >= PARTITIONS) {
      const [oldest, forgotten] = partitions.entries().next().value as [string, Partition];
      kept -= forgotten.texts.size;
      partitions.delete(oldest);
    }
    partition = { key, texts: new Map(), hits: 0, resting: 0, shapes: [] };
    partitions.set(key, partition);
  }
  lastTenant = t;
  lastCaller = c;
  last = partition;
  return partition;
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
 * in four was met again meanwhile, its memo was not paying, and is set aside for {@link REST} of its calls.
 */
function empty(partition: Partition): void {
  const size = partition.texts.size;
  if (size >= TEXTS / 64 && partition.hits < size / 4) partition.resting = REST;
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

// The flat object being read: where each key starts and ends, and each value's kind and span (or number).
const keyStart = new Int32Array(KEYS);
const keyEnd = new Int32Array(KEYS);
const valueKind = new Uint8Array(KEYS);
const valueStart = new Int32Array(KEYS);
const valueEnd = new Int32Array(KEYS);
const numbers = new Float64Array(KEYS);
const STRING = 1;
const NUMBER = 2;
const TRUE = 3;
const FALSE = 4;
const NULL = 5;

/**
 * The frozen object of a flat JSON object text (string, number, boolean and null values, at most {@link KEYS}
 * keys, no escapes), equal to JSON.parse's, or undefined for anything else (JSON.parse reads it). Strict JSON:
 * whitespace is space, tab, line feed and carriage return; a string holds no control character; a number is
 * JSON's grammar, its value JSON.parse's (Number of the same digits). A duplicate key, a key that is an array
 * index or `"__proto__"` is left to JSON.parse (the last value of a duplicate, the index order, the refusal).
 */
function readFlat(text: string, partition: Partition, owned: boolean): Snapshot | undefined {
  let i = blank(text, 0);
  if (text.charCodeAt(i) !== 123 /* { */) return undefined;
  i = blank(text, i + 1);
  let c = text.charCodeAt(i);
  let count = 0;
  // The keys met last: each key is first tried as the next key of this shape (no scan, no new string).
  const guess = partition.shapes[0];
  let same = guess !== undefined;
  if (c !== 125 /* } */)
    for (;;) {
      if (c !== 34 /* " */ || count === KEYS) return undefined;
      const start = i + 1;
      let end: number;
      const key = same && count < guess!.keys.length ? guess!.keys[count]! : undefined;
      if (key !== undefined && spells(text, start, key) && text.charCodeAt(start + key.length) === 34)
        end = start + key.length;
      else {
        same = false;
        end = stringEnd(text, start);
        if (end < 0) return undefined;
      }
      keyStart[count] = start;
      keyEnd[count] = end;
      i = blank(text, end + 1);
      if (text.charCodeAt(i) !== 58 /* : */) return undefined;
      i = blank(text, i + 1);
      c = text.charCodeAt(i);
      if (c === 34) {
        const close = stringEnd(text, i + 1);
        if (close < 0) return undefined;
        valueKind[count] = STRING;
        valueStart[count] = i + 1;
        valueEnd[count] = close;
        i = close + 1;
      } else if ((c >= 48 && c <= 57) || c === 45 /* - */) {
        i = number(text, i, count);
        if (i < 0) return undefined;
      } else if (c === 116 && spells(text, i, 'true')) {
        valueKind[count] = TRUE;
        i += 4;
      } else if (c === 102 && spells(text, i, 'false')) {
        valueKind[count] = FALSE;
        i += 5;
      } else if (c === 110 && spells(text, i, 'null')) {
        valueKind[count] = NULL;
        i += 4;
      } else return undefined;
      count++;
      i = blank(text, i);
      c = text.charCodeAt(i);
      if (c === 44 /* , */) {
        i = blank(text, i + 1);
        c = text.charCodeAt(i);
        continue;
      }
      if (c !== 125) return undefined;
      break;
    }
  if (blank(text, i + 1) !== text.length) return undefined;
  const shape = same && count === guess!.keys.length ? guess! : shapeOf(text, count, partition);
  if (shape === null) return undefined;
  const keys = shape.keys;
  // A string value is a slice of the text: of a copy of it unless the text is ours already (flatCopy).
  if (!owned)
    for (let k = 0; k < count; k++)
      if (valueKind[k] === STRING && valueEnd[k]! - valueStart[k]! >= 13) {
        text = flatCopy(text);
        break;
      }
  const object: Record<string, unknown> = {};
  for (let k = 0; k < count; k++) {
    const kind = valueKind[k];
    // No key is "__proto__" (shapeOf), so assigning defines a data property as JSON.parse does.
    object[keys[k]!] =
      kind === STRING
        ? text.slice(valueStart[k], valueEnd[k])
        : kind === NUMBER
          ? numbers[k]
          : kind === TRUE
            ? true
            : kind === FALSE
              ? false
              : null;
  }
  return Object.freeze(object);
}

/** The index past JSON whitespace from `i` (most texts have none: one look). */
function blank(text: string, i: number): number {
  return text.charCodeAt(i) > 32 ? i : spaces(text, i);
}

function spaces(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return i;
    i++;
  }
}

/** Whether `text` holds `word` from `at` (startsWith without its argument checks: a fifth of a read). */
function spells(text: string, at: number, word: string): boolean {
  for (let i = 0; i < word.length; i++) if (text.charCodeAt(at + i) !== word.charCodeAt(i)) return false;
  return true;
}

/** The index of the quote that closes a string begun at `i`; -1 for an escape, a control character or no end. */
function stringEnd(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 34) return i;
    // NaN (past the end) fails `c >= 32`.
    if (c === 92 || !(c >= 32)) return -1;
    i++;
  }
}

/** A JSON number from `i` (at a digit or '-') as value `k`: the index past it, or -1 if it is not JSON's grammar. */
function number(text: string, i: number, k: number): number {
  const from = i;
  let c = text.charCodeAt(i);
  if (c === 45) c = text.charCodeAt(++i);
  let digits = 0;
  let value = 0;
  if (c === 48) c = text.charCodeAt(++i);
  else if (c >= 49 && c <= 57)
    do {
      value = value * 10 + (c - 48);
      digits++;
      c = text.charCodeAt(++i);
    } while (c >= 48 && c <= 57);
  else return -1;
  let plain = digits <= 15; // an integer of at most 15 digits is exact as summed
  if (c === 46 /* . */) {
    plain = false;
    c = text.charCodeAt(++i);
    if (!(c >= 48 && c <= 57)) return -1;
    do c = text.charCodeAt(++i);
    while (c >= 48 && c <= 57);
  }
  if (c === 101 || c === 69 /* e E */) {
    plain = false;
    c = text.charCodeAt(++i);
    if (c === 43 || c === 45) c = text.charCodeAt(++i);
    if (!(c >= 48 && c <= 57)) return -1;
    do c = text.charCodeAt(++i);
    while (c >= 48 && c <= 57);
  }
  // Past 15 digits, a fraction or an exponent: the digits JSON.parse would read, converted the same way (correctly
  // rounded); too large for a double is null, as in every snapshot.
  if (!plain) value = Number(text.slice(from, i));
  else if (text.charCodeAt(from) === 45) value = -value;
  valueKind[k] = Number.isFinite(value) ? NUMBER : NULL;
  numbers[k] = value;
  return i;
}

/**
 * The shape of the `count` keys just read: one the partition keeps with these keys in this order, or a new one
 * (kept, newest first). Null for a duplicate key, an array-index key or `"__proto__"` (JSON.parse reads those).
 */
function shapeOf(text: string, count: number, partition: Partition): Shape | null {
  const shapes = partition.shapes;
  for (let s = 0; s < shapes.length; s++) {
    const shape = shapes[s]!;
    if (shape.keys.length !== count) continue;
    let k = 0;
    while (
      k < count &&
      keyEnd[k]! - keyStart[k]! === shape.keys[k]!.length &&
      spells(text, keyStart[k]!, shape.keys[k]!)
    )
      k++;
    if (k < count) continue;
    if (s > 0) {
      shapes.splice(s, 1);
      shapes.unshift(shape);
    }
    return shape;
  }
  const probe: Record<string, null> = {};
  for (let k = 0; k < count; k++) {
    const key = text.slice(keyStart[k], keyEnd[k]);
    if (key === '__proto__' || Object.hasOwn(probe, key)) return null;
    probe[key] = null;
  }
  // Object.keys gives the keys as the internalised strings a property key is, in insertion order unless one is
  // an array index (those come first, ascending): then the order is not the text's.
  const keys = Object.keys(probe);
  for (let k = 0; k < count; k++)
    if (keys[k]!.length !== keyEnd[k]! - keyStart[k]! || !spells(text, keyStart[k]!, keys[k]!)) return null;
  const shape: Shape = { keys };
  shapes.unshift(shape);
  if (shapes.length > SHAPES) shapes.pop();
  return shape;
}
