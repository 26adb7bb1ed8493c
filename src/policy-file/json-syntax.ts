/**
 * Strict JSON (RFC 8259) for `.json` policy files: the text is first checked as JSON, so a trailing
 * comma, a comment or a single-quoted string — all fine in YAML, which then reads the file for its
 * positions — is refused with the line and column where the JSON ends being JSON.
 */

/** Where and why `text` is not JSON, or null when it is. `offset` is in UTF-16 code units. */
export interface JsonSyntaxError {
  readonly offset: number;
  readonly message: string;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;

/**
 * Checks `text` as one JSON value (a leading byte-order mark is allowed, as RFC 8259 lets parsers do).
 * The verdict is `JSON.parse`'s; the scan only says where. Iterative, so deep nesting cannot overflow
 * the stack.
 */
export function jsonSyntaxError(text: string): JsonSyntaxError | null {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  try {
    JSON.parse(body);
    return null;
  } catch (error) {
    const found = scan(body);
    const shift = body === text ? 0 : 1;
    return found
      ? { offset: found.offset + shift, message: found.message }
      : { offset: 0, message: `not valid JSON: ${(error as Error).message}` };
  }
}

function scan(text: string): JsonSyntaxError | null {
  let i = 0;
  const stack: ('{' | '[')[] = [];
  const fail = (message: string, at = i): JsonSyntaxError => ({ offset: at, message });
  const skip = (): void => {
    WHITESPACE.lastIndex = i;
    WHITESPACE.exec(text);
    i = WHITESPACE.lastIndex;
  };
  const found = (): string => (i >= text.length ? 'the end of the file' : JSON.stringify(text[i]));
  const string = (): JsonSyntaxError | null => {
    const start = i;
    i++; // the opening quote
    while (i < text.length) {
      const ch = text.charCodeAt(i);
      if (ch === 0x22) {
        i++;
        return null;
      }
      if (ch === 0x5c) {
        ESCAPE.lastIndex = i;
        if (!ESCAPE.test(text))
          return fail(`invalid escape in a string (JSON has \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)`);
        i = ESCAPE.lastIndex;
        continue;
      }
      if (ch < 0x20) return fail('a control character (such as a tab or newline) inside a string; escape it');
      i++;
    }
    return fail('a string that never ends', start);
  };
  // value: expects a value; after: a value just ended.
  let state: 'value' | 'after' = 'value';
  skip();
  if (i >= text.length) return fail('the file is empty; expected a JSON object');
  for (;;) {
    skip();
    if (state === 'value') {
      const ch = text[i];
      if (ch === '{' || ch === '[') {
        stack.push(ch);
        i++;
        skip();
        if (text[i] === (ch === '{' ? '}' : ']')) {
          stack.pop();
          i++;
          state = 'after';
          continue;
        }
        if (ch === '{') {
          if (text[i] !== '"') return fail(`expected a double-quoted property name, found ${found()}`);
          const bad = string();
          if (bad) return bad;
          skip();
          if (text[i] !== ':') return fail(`expected ":" after the property name, found ${found()}`);
          i++;
        }
        continue;
      }
      if (ch === '"') {
        const bad = string();
        if (bad) return bad;
        state = 'after';
        continue;
      }
      NUMBER.lastIndex = i;
      if (ch !== undefined && /[-0-9]/.test(ch) && NUMBER.test(text)) {
        i = NUMBER.lastIndex;
        if (/[0-9.eE+-]/.test(text[i] ?? '')) return fail(`a malformed number`);
        state = 'after';
        continue;
      }
      const word = ['true', 'false', 'null'].find((w) => text.startsWith(w, i));
      if (word) {
        i += word.length;
        state = 'after';
        continue;
      }
      const comma = trailingComma(text, i);
      if ((ch === ']' || ch === '}') && comma !== null)
        return fail(`a trailing comma before ${JSON.stringify(ch)} (JSON allows none)`, comma);
      return fail(`expected a value, found ${found()}`);
    }
    // after a value
    const top = stack[stack.length - 1];
    if (top === undefined) {
      if (i < text.length) return fail(`unexpected ${found()} after the JSON value`);
      return null;
    }
    const close = top === '{' ? '}' : ']';
    if (text[i] === close) {
      stack.pop();
      i++;
      continue;
    }
    if (text[i] !== ',') return fail(`expected "," or "${close}", found ${found()}`);
    i++;
    skip();
    if (top === '{') {
      if (text[i] === '}') return fail('a trailing comma before "}" (JSON allows none)', trailingComma(text, i) ?? i);
      if (text[i] !== '"') return fail(`expected a double-quoted property name, found ${found()}`);
      const bad = string();
      if (bad) return bad;
      skip();
      if (text[i] !== ':') return fail(`expected ":" after the property name, found ${found()}`);
      i++;
    }
    state = 'value';
  }
}

/** The offset of a comma just before `close` (only whitespace between), or null. */
function trailingComma(text: string, close: number): number | null {
  let j = close - 1;
  while (j >= 0 && ' \t\n\r'.includes(text[j]!)) j--;
  return j >= 0 && text[j] === ',' ? j : null;
}

/** 1-based line and column of a UTF-16 offset (lines end at \n; \r\n counts once). */
export function lineColumn(text: string, offset: number): { readonly line: number; readonly column: number } {
  let line = 1;
  let start = 0;
  for (let j = text.indexOf('\n'); j !== -1 && j < offset; j = text.indexOf('\n', j + 1)) {
    line++;
    start = j + 1;
  }
  return { line, column: offset - start + 1 };
}
