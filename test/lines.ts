/**
 * A stream's lines, split at LF only as the MCP stdio transports split them (src/lines.ts). node:readline also
 * splits at a lone CR and, from Node 24, at U+2028 and U+2029, which JSON.stringify leaves unescaped in strings: a
 * JSON line holding one came out in pieces. No vitest import: spawned fixtures use it too.
 */
import { Lines } from '../src/lines.js';

export { linesOf } from '../src/lines.js';

/** Calls `listener` with each line of `input` as it comes (a last line without a newline is not one). */
export function onLines(input: NodeJS.ReadableStream, listener: (line: string) => void): void {
  const lines = new Lines();
  input.on('data', (chunk: Buffer | string) => {
    lines.append(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    for (let line = lines.next(); line !== null; line = lines.next()) listener(line);
  });
}
