import { CASE_FOLDING } from './case-folding-data.js';
import { decodeCodePointTable } from './code-point-table.js';

let table: Map<number, string> | undefined;

function foldTable(): Map<number, string> {
  return (table ??= decodeCodePointTable(CASE_FOLDING));
}

/**
 * Full Unicode case folding (CaseFolding.txt statuses C and F), the same mapping as Python's
 * `str.casefold()`: "ß" → "ss", "ς" → "σ", "ﬁ" → "fi", Cherokee small letters → capitals.
 * `String#toLowerCase` is not a substitute: it is locale-free lower-casing, not folding.
 */
export function caseFold(text: string): string {
  const folds = foldTable();
  let out = '';
  let changedFrom = -1;
  for (let i = 0; i < text.length; i++) {
    const cp = text.codePointAt(i)!;
    const to = folds.get(cp);
    if (to !== undefined) {
      if (changedFrom < 0) {
        out = text.slice(0, i);
        changedFrom = i;
      }
      out += to;
    } else if (changedFrom >= 0) {
      out += String.fromCodePoint(cp);
    }
    if (cp > 0xffff) i++;
  }
  return changedFrom < 0 ? text : out;
}
