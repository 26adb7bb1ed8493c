/**
 * A fast-path answer written from the upstream's own line (issue 25.2): the client's line is
 * `{"jsonrpc":"2.0","id":<client id>,"result":<span>}` with `<span>` the text of `result` in the stdio
 * upstream's line, instead of `JSON.stringify` of the object parsed from it (the answer's re-serialisation was
 * ~15 % of the gateway's instructions a `tools/call`, docs/benchmarks.md). The HTTP fast path's answer alike (issue
 * 25.3): an SSE event's data written by {@link answerTextOf}, its result read from a stdio upstream's line or from an
 * HTTP upstream's SSE event (upstream-raw-post.ts notes that text as the line).
 *
 * Only where the bytes are provably those `JSON.stringify` writes: the object to send is the very object
 * parsed from that line (the line stamped on it; the fast path hands the upstream's result on untouched,
 * anything the gateway builds or copies is another object), and a scan of the line proves its `result` text
 * is what `JSON.stringify` writes for its parse — one value, no whitespace, strings escaped exactly as
 * `JSON.stringify` escapes them, numbers in their shortest round-trip form, no key that is an integer index
 * (V8 would reorder it), and as many keys in the text as in the object (a duplicate key counts twice in the
 * text, once in the object). Anything else, or any doubt, is written by `JSON.stringify` as before. The object is
 * read from the line by parseJsonText (upstream-raw.ts): with Node 24's `JSON.parse`, which can read an escaped key
 * as another key an earlier parse of the process left (src/json-text.ts), the gateway checked (the output schema)
 * other keys than the line's, which this splice then wrote to the client.
 */

import {
  CLOSE_BRACE,
  CLOSE_BRACKET,
  closingQuote,
  COLON,
  COMMA,
  evenRunBefore,
  numberEnd,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from '../json-text.js';
import { Stamped } from '../stamps.js';

/**
 * The line a raw result was parsed from, stamped on the result object by the upstream's reader (upstream-raw.ts's
 * stdio lines, upstream-raw-post.ts's SSE events):
 * a private field (src/stamps.ts), not a WeakMap of results (an ephemeron insert per answer). Only that very object
 * carries it: a copy, a Proxy or an heir of it has none.
 */
class AnswerLine extends Stamped {
  #line: string;

  constructor(result: object, line: string) {
    super(result);
    this.#line = line;
  }

  /** The line `result` was parsed from, or undefined. */
  static of(result: object): string | undefined {
    return #line in result ? (result as AnswerLine).#line : undefined;
  }

  /** Notes `line` on `result`, in place of any line noted before. */
  static note(result: object, line: string): void {
    if (#line in result) (result as AnswerLine).#line = line;
    else new AnswerLine(result, line);
  }
}

/** Notes that `result` (an object) was parsed from the upstream's `line` (a raw answer, one JSON-RPC response). */
export function noteAnswerLine(result: unknown, line: string): void {
  if (typeof result !== 'object' || result === null) return;
  try {
    AnswerLine.note(result, line);
  } catch {
    // An object that takes no field (were V8 to refuse one on a non-extensible object): no line, JSON.stringify writes it.
  }
}

const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
/** Deeper results are left to JSON.stringify (whose own depth limit then decides, as before). */
const MAX_DEPTH = 64;

/**
 * Scans the JSON object at `start` of `text` (text JSON.parse accepted): where it ends (the index after its
 * closing brace) when every token is what `JSON.stringify` writes, with the number of keys it holds in
 * `counted.keys`; -1 otherwise.
 */
function scanValue(text: string, start: number, counted: { keys: number }): number {
  if (text.charCodeAt(start) !== OPEN_BRACE) return -1;
  const end = text.length;
  let depth = 0;
  let keys = 0;
  let i = start;
  while (i < end) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const after = stringEnd(text, i);
      if (after < 0) return -1;
      if (text.charCodeAt(after) === COLON) {
        // A key: one that may be an integer index is left to JSON.stringify (V8 orders those first).
        const first = text.charCodeAt(i + 1);
        if (first >= ZERO && first <= NINE) return -1;
        keys++;
        i = after + 1;
      } else i = after;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > MAX_DEPTH) return -1;
      i++;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
      i++;
      if (depth === 0) {
        counted.keys = keys;
        return i;
      }
    } else if (c === COMMA) i++;
    else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      i = scanNumber(text, i);
      if (i < 0) return -1;
    } else if (text.startsWith('true', i) || text.startsWith('null', i)) i += 4;
    else if (text.startsWith('false', i)) i += 5;
    else return -1; // whitespace, or anything JSON.stringify would not write
  }
  return -1;
}

/** The index after the string whose opening quote is at `i` (after its closing quote), or -1. */
function stringEnd(text: string, i: number): number {
  const q = closingQuote(text, i + 1);
  return q < 0 ? -1 : q + 1;
}

/**
 * Whether every escape in `text` (JSON text JSON.parse accepted: it has no raw control character in a string,
 * no escape but `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\uXXXX`) is one JSON.stringify writes: no
 * `\/`, and a `\u` escape only for a control character without a short form, in lower case (`\u001f`; a lone
 * surrogate's escape, which JSON.stringify also writes, is left to it). An escape starts at a backslash
 * after an even run of backslashes; found with indexOf, so a text without such escapes is not read in JavaScript.
 */
function escapesAsStringify(text: string): boolean {
  // Most texts have no `\/` or `\u` at all: one native pass says so (two indexOf searches cost more).
  if (!MAYBE_ODD_ESCAPE.test(text)) return true;
  for (let p = text.indexOf('\\/'); p >= 0; p = text.indexOf('\\/', p + 1)) if (evenRunBefore(text, p)) return false;
  for (let p = text.indexOf('\\u'); p >= 0; p = text.indexOf('\\u', p + 1)) {
    if (!evenRunBefore(text, p)) continue; // an escaped backslash, then a letter u
    if (text.charCodeAt(p + 2) !== ZERO || text.charCodeAt(p + 3) !== ZERO) return false;
    const high = text.charCodeAt(p + 4);
    const low = text.charCodeAt(p + 5);
    const digit = low >= ZERO && low <= NINE;
    const letter = low >= 0x61 && low <= 0x66; // a-f
    if (
      high === ZERO
        ? !((low >= ZERO && low <= 0x37) || low === 0x62 || low === 0x65 || low === 0x66)
        : high !== 0x31 || !(digit || letter)
    )
      return false;
  }
  return true;
}

/** A backslash before a slash or a `u`: an escape JSON.stringify may not write, or an escaped backslash before one. */
const MAYBE_ODD_ESCAPE = /\\[/u]/;

/** The index after the number at `i` when `JSON.stringify` writes it so; -1 otherwise. */
function scanNumber(text: string, i: number): number {
  const after = numberEnd(text, i);
  if (after === -1) return -1;
  const token = text.slice(i, after);
  // -0 is written 0; 1.0, 1e2, 0.10 and integers past 2^53 are not in their shortest form.
  return String(Number(token)) === token ? after : -1;
}

const JSONRPC = '"jsonrpc":"2.0"';
const ID = '"id":"toolgate-raw:';
const RESULT = '"result":';

/**
 * Where the `result` value of an upstream's `line` starts and ends ([start, end)) when the line is exactly one
 * object of the three members `"jsonrpc":"2.0"`, `"id":"toolgate-raw:<digits>"` and `"result":<object>` in
 * any order, no whitespace, each once, and the result's text is in `JSON.stringify`'s form; else undefined.
 */
function resultSpan(line: string): { start: number; end: number; keys: number } | undefined {
  if (line.charCodeAt(0) !== OPEN_BRACE || line.charCodeAt(line.length - 1) !== CLOSE_BRACE) return undefined;
  if (!line.isWellFormed() || !escapesAsStringify(line)) return undefined;
  let i = 1;
  let seen = 0;
  let start = -1;
  let end = -1;
  const counted = { keys: 0 };
  for (;;) {
    if (line.startsWith(JSONRPC, i)) {
      if (seen & 1) return undefined;
      seen |= 1;
      i += JSONRPC.length;
    } else if (line.startsWith(ID, i)) {
      if (seen & 2) return undefined;
      seen |= 2;
      let j = i + ID.length;
      while (j < line.length && line.charCodeAt(j) >= ZERO && line.charCodeAt(j) <= NINE) j++;
      if (j === i + ID.length || line.charCodeAt(j) !== QUOTE) return undefined;
      i = j + 1;
    } else if (line.startsWith(RESULT, i)) {
      if (seen & 4) return undefined;
      seen |= 4;
      start = i + RESULT.length;
      end = scanValue(line, start, counted);
      if (end < 0) return undefined;
      i = end;
    } else return undefined;
    const c = line.charCodeAt(i);
    if (c === CLOSE_BRACE) return i === line.length - 1 && seen === 7 ? { start, end, keys: counted.keys } : undefined;
    if (c !== COMMA) return undefined;
    i++;
  }
}

/** How many keys `value` holds, its nested objects' included (arrays walked), or -1 for anything JSON.parse does not make. */
function keyCount(value: unknown): number {
  if (typeof value !== 'object' || value === null) {
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || value === null
      ? 0
      : -1;
  }
  let n = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const inner = keyCount(value[i]);
      if (inner < 0) return -1;
      n += inner;
    }
    return n;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return -1;
  const keys = Object.keys(value);
  n = keys.length;
  for (let i = 0; i < keys.length; i++) {
    const inner = keyCount((value as Record<string, unknown>)[keys[i]!]);
    if (inner < 0) return -1;
    n += inner;
  }
  return n;
}

/**
 * The line `JSON.stringify(message) + '\n'` would be, made from the upstream's line `message.result` was parsed
 * from, or undefined (then the caller serialises as before): `message` must be `{ jsonrpc: '2.0', id, result }`
 * with its keys in that order, and `result` the object parsed from a line that passes {@link resultSpan}. The
 * stdio fast path's answer (fastpath.ts).
 */
export function answerLineOf(message: object): string | undefined {
  return splicedOrNot(message, '\n');
}

/**
 * {@link answerLineOf} without the newline: the text `JSON.stringify(message)` would be, or undefined. The HTTP
 * fast path's answer (http-fast.ts: an SSE event's data), its result parsed from an HTTP upstream's answer text
 * (upstream-raw-post.ts) or a stdio upstream's line.
 */
export function answerTextOf(message: object): string | undefined {
  return splicedOrNot(message, '');
}

function splicedOrNot(message: object, end: string): string | undefined {
  try {
    return spliced(message, end);
  } catch {
    return undefined; // never a failure of its own: JSON.stringify decides, as before
  }
}

function spliced(message: object, end: string): string | undefined {
  const m = message as Record<string, unknown>;
  const result = m['result'];
  if (typeof result !== 'object' || result === null) return undefined;
  const line = AnswerLine.of(result);
  if (line === undefined) return undefined;
  const id = m['id'];
  if (m['jsonrpc'] !== '2.0' || !(typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id))))
    return undefined;
  const keys = Object.keys(m);
  if (keys.length !== 3 || keys[0] !== 'jsonrpc' || keys[1] !== 'id' || keys[2] !== 'result') return undefined;
  const span = resultSpan(line);
  if (span === undefined || keyCount(result) !== span.keys) return undefined;
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${line.slice(span.start, span.end)}}${end}`;
}
