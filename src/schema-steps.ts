/**
 * The work a compiled check does, counted where it is done (src/schema-bounds.ts `boundErrors` puts the count into
 * every function Ajv writes). A count of function starts alone let a check do unbounded work under its bound: a
 * chain of 20 `allOf` pairs of `$ref`s applies a leaf 2^20 times, and a leaf `{items: {type: string}}` loops over
 * the whole array at each (10,000 strings, 40 KB of arguments: 9 s), a leaf of 1,000 `properties` runs its 1,000
 * checks at each. So every block of code that runs again and again counts what it runs, each time it runs: a
 * function's body at its start (`let errors = 0;`), a loop's body at each iteration; by its weight, the statements
 * (`;`) it holds outside the loops within it (which count themselves). A block runs each of its statements at most
 * once (Ajv writes no other jumps back), so the steps a check counts bound the statements it runs. Each function counts
 * into the count of the check that called it, read at its start; an `$async` check's function makes that count the
 * running one again after each of its awaits ({@link resumes}; src/schema-bounds.ts `newAsyncCheck`).
 */

/**
 * The loops Ajv's code generator writes (ajv/dist/compile/codegen/index.js): `forRange`, `for(let i0=0; i0<len0;
 * i0++)`, and `forOf` / `forIn`, `for(const x of y)` / `for(const key0 in data)`, each with a block for its body. Its
 * third, `gen.for` (any header), is written only by Ajv's own `uniqueItems` (replaced, src/schema-bounds.ts) and JTD.
 */
const RANGE = /^(?:let|var) ([\w$]+)=[^;]+; \1<[^;]+; \1\+\+$/;
const ITERATION = /^(?:const|let|var) [\w$]+ (?:of|in) [^;]+$/;

/** What the count reads in code: loops, a function's start, blocks and statements. */
const TOKENS = /(?<![\w$.])(?:for|while|do)(?![\w$])|(?<![\w$.])let errors = 0;|[{};]/g;

/**
 * What an iteration over an object's keys (`for(const key0 in data)`) costs beside its statements: V8 collects and
 * orders the keys of a large (dictionary) object at each loop, ~120 ns a key against ~0.3–1 ns a statement
 * (10,000 keys looped over 1,024 times: 1.2 s).
 */
export const KEY_STEPS = 100;

interface Block {
  /** Where its count goes: after its start (a function's) or its opening brace (a loop's). */
  at: number;
  /** Its statements, those of the blocks within it that do not count themselves. */
  statements: number;
  counts: boolean;
  /** A function's body (its count starts it), not a loop's. */
  start: boolean;
  /** Steps beside its statements: an iteration over keys ({@link KEY_STEPS}). */
  extra: number;
}

/**
 * `code` (Ajv's, one compilation) with `step(weight, start)` put where each function starts (`start` true) and where
 * each loop's body starts, `weight` its statements (and a key's, {@link KEY_STEPS}); and how many functions start. A
 * loop it does not know (`while`, `do`, another header, a body that is not a block), a function start outside a
 * function or inside a loop, or braces that do not pair throw: the schema does not compile, rather than be unbounded.
 */
export function countSteps(
  code: string,
  step: (weight: number, start: boolean) => string,
): { code: string; starts: number } {
  const masked = maskedOf(code);
  const open: Block[] = [];
  const counted: { at: number; block: Block }[] = [];
  let starts = 0;
  TOKENS.lastIndex = 0;
  for (let token = TOKENS.exec(masked); token !== null; token = TOKENS.exec(masked)) {
    const [text] = token;
    const top = open.at(-1);
    if (text === ';') {
      if (top) top.statements++;
    } else if (text === '{') {
      open.push({ at: token.index + 1, statements: 0, counts: false, start: false, extra: 0 });
    } else if (text === '}') {
      const block = open.pop();
      if (block === undefined) throw cannot('its braces do not pair');
      if (block.counts) counted.push({ at: block.at, block });
      else if (open.length > 0) open.at(-1)!.statements += block.statements;
    } else if (text === 'let errors = 0;') {
      if (top === undefined || top.counts) throw cannot('a compiled check starts outside a function of its own');
      starts++;
      top.counts = true;
      top.start = true;
      top.at = token.index + text.length;
      top.statements++;
    } else if (text === 'for') {
      const { body, keys } = loopBody(masked, token.index + text.length);
      open.push({ at: body, statements: 0, counts: true, start: false, extra: keys ? KEY_STEPS : 0 });
      TOKENS.lastIndex = body;
    } else throw cannot(`a loop it does not know, "${text}"`);
  }
  if (open.length > 0) throw cannot('its braces do not pair');
  counted.sort((a, b) => a.at - b.at);
  let out = '';
  let from = 0;
  for (const { at, block } of counted) {
    out += code.slice(from, at) + step(Math.max(1, block.extra + block.statements), block.start);
    from = at;
  }
  return { code: out + code.slice(from), starts };
}

/**
 * Where the body of the `for` whose header opens at `at` starts (after its `{`), and whether it loops over an
 * object's keys (`in`); a loop Ajv does not write throws.
 */
function loopBody(masked: string, at: number): { body: number; keys: boolean } {
  const open = /\s*\(/y;
  open.lastIndex = at;
  if (!open.test(masked)) throw cannot('a loop it does not know, "for" without its header');
  let depth = 1;
  let close = open.lastIndex;
  for (; close < masked.length && depth > 0; close++)
    if (masked[close] === '(') depth++;
    else if (masked[close] === ')') depth--;
  const header = masked.slice(open.lastIndex, close - 1);
  if (depth > 0 || (!RANGE.test(header) && !ITERATION.test(header)))
    throw cannot(`a loop it does not know, "for(${header})"`);
  const brace = /\s*\{/y;
  brace.lastIndex = close;
  if (!brace.test(masked)) throw cannot(`a loop whose body is not a block, "for(${header})"`);
  return { body: brace.lastIndex, keys: / in [^;]+$/.test(header) };
}

/** An `await` in code (not a property's name). */
const AWAIT = /(?<![\w$.])await(?![\w$])/g;

/** What may stand before an `await` Ajv writes: the start of a `try` block, or an assignment first in it. */
const AWAIT_AFTER = /try\{(?:[\w$]+ = )?$/;

/** A `catch` and its block's opening, right after a `try` block. */
const CATCH = /catch\([\w$]+\)\{/y;

/**
 * `code` (Ajv's) with `resolved` put where an `$async` check's function continues after each of its `await`s that
 * resolved, before any other code of it runs: after the awaited statement; and `rejected` first in the `catch` of its
 * `try` block (it rejected). Ajv writes an `await` as the first statement of a `try` block: a reference to an `$async` schema
 * (`try{await validate1(…);}catch(e0){…}`, ajv/dist/vocabularies/core/ref.js `callAsyncRef`) and an `async` keyword
 * (`try{valid0 = await …;}catch(e0){…}`, ajv/dist/compile/validate/keyword.js, none in toolgate's Ajvs). An `await`
 * anywhere else (an async format's, in a condition: ajv/dist/vocabularies/format/format.js, none in toolgate's Ajvs)
 * throws: the schema does not compile, rather than run on another check's count.
 */
export function resumes(code: string, resolved: string, rejected: string): string {
  const masked = maskedOf(code);
  const at: [number, string][] = [];
  AWAIT.lastIndex = 0;
  for (let token = AWAIT.exec(masked); token !== null; token = AWAIT.exec(masked)) {
    const before = AWAIT_AFTER.exec(masked.slice(Math.max(0, token.index - 64), token.index));
    if (before === null) throw cannot('an await it does not know');
    const tryOpen = token.index - before[0].length + 3;
    const statementEnd = closing(masked, token.index, ';');
    const tryClose = closing(masked, tryOpen + 1, '}');
    CATCH.lastIndex = tryClose + 1;
    if (statementEnd > tryClose || !CATCH.test(masked)) throw cannot('an await it does not know');
    at.push([statementEnd + 1, resolved], [CATCH.lastIndex, rejected]);
  }
  if (at.length === 0) return code;
  at.sort((a, b) => a[0] - b[0]);
  let out = '';
  let from = 0;
  for (const [to, resume] of at) {
    out += code.slice(from, to) + resume;
    from = to;
  }
  return out + code.slice(from);
}

/** Where `end` (`;` or `}`) stands in `masked` outside the brackets opened from `from` on. */
function closing(masked: string, from: number, end: ';' | '}'): number {
  let depth = 0;
  for (let i = from; i < masked.length; i++) {
    const c = masked[i];
    if (depth === 0 && c === end) return i;
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
    if (depth < 0) break;
  }
  throw cannot('an await it does not know');
}

/** `code` with its string literals' contents blanked, each the same length (where its tokens are is where code's are). */
function maskedOf(code: string): string {
  let masked = '';
  for (const [part, literal] of segments(code)) masked += literal ? `"${' '.repeat(part.length - 2)}"` : part;
  return masked;
}

function cannot(why: string): Error {
  return new Error(`toolgate cannot bound this schema's check (${why})`);
}

/** `code` cut into code and double-quoted string literals (Ajv writes every string so), in order. */
export function* segments(code: string): Generator<[string, boolean]> {
  let at = 0;
  while (at < code.length) {
    const open = code.indexOf('"', at);
    if (open === -1) {
      yield [code.slice(at), false];
      return;
    }
    yield [code.slice(at, open), false];
    let close = open + 1;
    while (close < code.length && code[close] !== '"') close += code[close] === '\\' ? 2 : 1;
    if (close >= code.length) throw cannot('a string of its code is not closed');
    yield [code.slice(open, close + 1), true];
    at = close + 1;
  }
}
