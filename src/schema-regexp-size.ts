/**
 * What a translated pattern (schema-regexp.ts) may cost RE2. RE2 is linear in the text, but its time is text ×
 * program and its program is as large as the pattern makes it: `(?:[ab]?…){1000}` (3 KB of pattern) expanded to
 * ~1.2 million instructions (1 s and 200 MB to compile, seconds a call), and each leading lookahead is a program of
 * its own. So a pattern's programs are bounded together before RE2 compiles them, and the text a call may test
 * against them is bounded by their size.
 */

/**
 * The most a pattern's RE2 programs may have together, by {@link programBound} (up to 4× what RE2 compiles): zod 4's
 * largest formats, `ipv6()` 1,022 (573 compiled) and `hostname()` 804 (777), and `^(?:[a-z0-9]{1,63}\.){1,8}[a-z]{2,63}$`
 * 1,320 (1,147) pass; `[ab]{999}a[ab]{999}` 4,012 (2,005) does not.
 */
export const MAX_PROGRAM = 3_000;

/**
 * The most a test may cost: text length × program size (RE2's NFA steps each thread a character, ~20 ns a step
 * here: ~0.2 s). A longer text fails the pattern (the argument is refused, never tested for seconds).
 */
export const MAX_WORK = 10_000_000;

/**
 * The most code point ranges a pattern's property escapes may write out together. A class is one RE2 instruction
 * however many ranges it holds, and `\p{Lu}` writes 655 in six characters of pattern (other members cost the pattern
 * a character or more a range: linear in it): 2,900 of them (17 KB of pattern, 2,913 instructions) were 17 million
 * characters of translation, 2.3 s and ~18 MB a pattern. `\p{L}` is ~660 ranges: ~30 of them pass, at about what a
 * pattern at MAX_PROGRAM costs (~20 ms and ~0.2 MB to compile).
 */
export const MAX_PROPERTY_RANGES = 20_000;

/**
 * An upper bound of the instructions RE2 compiles `expression` to: `expression` is the translation's output (code
 * points as `\x{…}`, classes `[…]` of them, `(?:` groups, `|`, `^ $ \b \B`, quantifiers `* + ?` and `{n}`, `{n,}`,
 * `{n,m}`). A counted repeat copies its atom as many times as its largest count (or its least, when unbounded) plus one.
 */
export function programBound(expression: string): number {
  const frames: { total: number; alternative: number; last: number }[] = [{ total: 0, alternative: 0, last: 0 }];
  let top = frames[0]!;
  const atom = (size: number): void => {
    top.alternative += size;
    top.last = size;
  };
  for (let i = 0; i < expression.length;) {
    const c = expression[i]!;
    if (c === '\\') {
      if (expression[i + 1] === 'x') i = expression.indexOf('}', i) + 1;
      else i += 2; // \b \B
      atom(1);
    } else if (c === '[') {
      i = expression.indexOf(']', i) + 1;
      atom(1);
    } else if (c === '(') {
      i += 3; // (?:
      frames.push((top = { total: 0, alternative: 0, last: 0 }));
    } else if (c === '|') {
      i++;
      top.total += top.alternative + 1;
      top.alternative = 0;
      top.last = 0;
    } else if (c === ')') {
      i++;
      const group = frames.pop()!;
      top = frames[frames.length - 1]!;
      atom(group.total + group.alternative + 1);
    } else if (c === '*' || c === '+' || c === '?') {
      i++;
      top.alternative += 2;
      top.last += 2;
    } else if (c === '{') {
      const end = expression.indexOf('}', i);
      const [min, max] = expression.slice(i + 1, end).split(',');
      const copies = Math.max(Number(min), max === undefined || max === '' ? 0 : Number(max)) + 1;
      i = end + 1;
      // Each copy past the least is optional (a split before it).
      top.alternative += (top.last + 1) * copies - top.last;
      top.last = (top.last + 1) * copies;
    } else {
      i++; // ^ $
      atom(1);
    }
    if (i <= 0) return Infinity; // not the translation's form: never compiled
  }
  if (frames.length !== 1) return Infinity;
  return top.total + top.alternative + 4; // the program's start, match and fail
}
