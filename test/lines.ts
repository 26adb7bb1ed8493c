/**
 * A stream's lines, split at LF only, as the MCP stdio transports split them. node:readline also splits at a lone CR
 * and, from Node 24, at U+2028 and U+2029, which JSON.stringify leaves unescaped in strings: a JSON line holding one
 * came out in pieces. No vitest import: spawned fixtures use it too.
 */
export function onLines(input: NodeJS.ReadableStream, listener: (line: string) => void): void {
  let held = '';
  input.setEncoding('utf8');
  input.on('data', (chunk: string) => {
    let start = 0;
    for (let at = chunk.indexOf('\n'); at !== -1; at = chunk.indexOf('\n', start)) {
      const line = held + chunk.slice(start, at);
      held = '';
      start = at + 1;
      listener(line.endsWith('\r') ? line.slice(0, -1) : line);
    }
    held += chunk.slice(start);
  });
}
