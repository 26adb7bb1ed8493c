/**
 * JSON text read with its object keys as written, on every V8. V8 12.8 through at least 14.6 (Node 24 and 26;
 * not Node 20 or 22) resolves an escaped object key of `JSON.parse` through an existing map transition when
 * the key's raw source starts with that transition's key (nodejs/node#63785, V8 issue 521080746): once the
 * process has parsed `{"h":[],"\\":0}`, the text `{"h":1,"\"":2}` is read with the keys `h` and `\`. The poisoning
 * is process-wide, so one client's request makes the gateway misread another's keys, while a peer reading the
 * same text reads them as written.
 *
 * Only a key holding an escape is ever misread (a key without one is compared as the text holds it), and no
 * value is. So a text without a backslash, or whose backslashes are all in values (code, Windows paths), is
 * `JSON.parse`'s as before; a text with an escaped key is read again by a small strict reader that decodes
 * each string (keys included) by `JSON.parse` of that one string token as a value.
 */

/** The character codes of JSON's structure (answer-lines.ts reads them too). */
export const QUOTE = 0x22;
const BACKSLASH = 0x5c;
export const COLON = 0x3a;
export const COMMA = 0x2c;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;

/**
 * `JSON.parse(text)` with every object key as the text writes it, whatever keys the process's earlier parses
 * left in V8's transition tree. Throws what `JSON.parse` throws (a SyntaxError, its message); no reviver.
 *
 * @example
 * const message = parseJsonText(line); // instead of JSON.parse(line) for text from outside
 */
export function parseJsonText(text: string): unknown {
  const value: unknown = JSON.parse(text); // the verdict on the text, and the value when no key is escaped
  const backslash = text.indexOf('\\');
  return backslash === -1 || !escapedKeyFrom(text, backslash) ? value : readStrictly(text);
}

/**
 * Whether a key of `text` (JSON text: backslashes only inside strings) holds an escape, `first` being the text's
 * first backslash (no key ending before it can hold one). Only the colons are looked at (`indexOf`, natively):
 * one after whitespace and a quote not escaped ends a key (in a string, such a quote can only be the string's
 * opening one, and then nothing lies between it and the quote before it). The key starts at the nearest quote
 * before that is not escaped; it holds an escape if a backslash lies between. What values hold costs a look at
 * each colon in them, nothing more (the escapes of code, Windows paths).
 */
function escapedKeyFrom(text: string, first: number): boolean {
  // The first backslash at or after the last key's start: the keys' starts only grow, so each backslash is found
  // once (a `lastIndexOf` from each key's end went back to the previous backslash: a text with one backslash in a
  // value and many keys after it cost the square of its length, seconds for a megabyte).
  let backslash = first;
  for (let colon = text.indexOf(':', first); colon !== -1; colon = text.indexOf(':', colon + 1)) {
    const end = skipSpaceBack(text, colon - 1);
    if (text.charCodeAt(end) !== QUOTE) continue;
    if (text.charCodeAt(end - 1) === BACKSLASH && !evenRunBefore(text, end)) continue; // `\"` inside a value
    let start = text.lastIndexOf('"', end - 1);
    while (start > 0 && text.charCodeAt(start - 1) === BACKSLASH && !evenRunBefore(text, start))
      start = text.lastIndexOf('"', start - 1);
    if (backslash < start) backslash = text.indexOf('\\', start);
    if (backslash !== -1 && backslash < end) return true;
    if (backslash === -1) return false;
  }
  return false;
}

/** The index of the last character at or before `i` that is not JSON whitespace (-1: none). */
function skipSpaceBack(text: string, i: number): number {
  for (; ; i--) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
  }
}

/**
 * The index of the quote that closes the string `from` is in (JSON text; `from` past its opening quote, or at a
 * backslash that starts an escape), or -1: the next quote after an even run of backslashes.
 */
export function closingQuote(text: string, from: number): number {
  for (let j = from; ;) {
    const q = text.indexOf('"', j);
    if (q === -1) return -1;
    if (text.charCodeAt(q - 1) !== BACKSLASH || evenRunBefore(text, q)) return q;
    j = q + 1;
  }
}

/**
 * Whether the run of backslashes just before `at` is of even length (then `at` is not escaped). A run inside a
 * string starts an escape: the character before it is not a backslash, so not an escape's first character.
 */
export function evenRunBefore(text: string, at: number): boolean {
  let k = at;
  while (k > 0 && text.charCodeAt(k - 1) === BACKSLASH) k--;
  return (at - k) % 2 === 0;
}

/** The index of the first character at or after `i` that is not JSON whitespace. */
function skipSpace(text: string, i: number): number {
  for (; ; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
  }
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/** The index after the JSON number token at `i` of `text`, or -1 when none starts there. */
export function numberEnd(text: string, i: number): number {
  NUMBER.lastIndex = i;
  return NUMBER.test(text) ? NUMBER.lastIndex : -1;
}

/**
 * An object or array being read, the key its next value goes under (an object's), and the one it is in (a
 * linked list, not an array: no prototype's index setter can touch it).
 */
interface Open {
  readonly container: Record<string, unknown> | unknown[];
  readonly array: boolean;
  readonly parent: Open | undefined;
  key: string;
}

function refuse(at: number): never {
  throw new SyntaxError(`JSON text not read as JSON.parse read it, at position ${at}`);
}

/**
 * The value of `text` read token by token, iteratively (nesting as deep as the text's), built as `JSON.parse`
 * builds it: plain objects and arrays whose members are own data properties created in text order (a
 * duplicate key keeps its first place and its last value; `__proto__` is an own property, not the prototype;
 * a setter on a prototype is not called), strings and numbers decoded by `JSON.parse` of their single token.
 */
function readStrictly(text: string): unknown {
  let top: Open | undefined;
  let i = skipSpace(text, 0);
  for (;;) {
    let value: unknown;
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const array = c === OPEN_BRACKET;
      const container: Open['container'] = array ? [] : {};
      i = skipSpace(text, i + 1);
      if (text.charCodeAt(i) === (array ? CLOSE_BRACKET : CLOSE_BRACE)) {
        value = container;
        i++;
      } else {
        top = { container, array, parent: top, key: '' };
        if (!array) i = readKey(text, i, top);
        continue;
      }
    } else if (c === QUOTE) {
      const end = closingQuote(text, i + 1);
      if (end === -1) refuse(i);
      value = JSON.parse(text.slice(i, end + 1));
      i = end + 1;
    } else if (text.startsWith('true', i)) {
      value = true;
      i += 4;
    } else if (text.startsWith('false', i)) {
      value = false;
      i += 5;
    } else if (text.startsWith('null', i)) {
      value = null;
      i += 4;
    } else {
      const end = numberEnd(text, i);
      if (end === -1) refuse(i);
      value = JSON.parse(text.slice(i, end));
      i = end;
    }
    // A value read: it goes into the containers it ends, each then a value of the one around it.
    for (;;) {
      i = skipSpace(text, i);
      const open = top;
      if (open === undefined) {
        if (i !== text.length) refuse(i);
        return value;
      }
      Object.defineProperty(open.container, open.array ? (open.container as unknown[]).length : open.key, {
        value,
        writable: true,
        enumerable: true,
        configurable: true,
      });
      const next = text.charCodeAt(i);
      if (next === COMMA) {
        i = skipSpace(text, i + 1);
        if (!open.array) i = readKey(text, i, open);
        break;
      }
      if (next !== (open.array ? CLOSE_BRACKET : CLOSE_BRACE)) refuse(i);
      top = open.parent;
      value = open.container;
      i++;
    }
  }
}

/** Reads the key at `i` and its colon into `open`; the index of its value. */
function readKey(text: string, i: number, open: Open): number {
  if (text.charCodeAt(i) !== QUOTE) refuse(i);
  const end = closingQuote(text, i + 1);
  if (end === -1) refuse(i);
  open.key = JSON.parse(text.slice(i, end + 1)) as string;
  const colon = skipSpace(text, end + 1);
  if (text.charCodeAt(colon) !== COLON) refuse(colon);
  return skipSpace(text, colon + 1);
}
