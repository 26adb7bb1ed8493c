/**
 * Decodes the compact tables the generators in scripts/ write: entries `<from><to…>` joined by U+0000,
 * each mapping one code point to a replacement string. Built on first use and kept.
 */
export function decodeCodePointTable(data: string): Map<number, string> {
  const table = new Map<number, string>();
  for (const entry of data.split('\u0000')) {
    const from = entry.codePointAt(0)!;
    table.set(from, entry.slice(from > 0xffff ? 2 : 1));
  }
  return table;
}
