// Issue 25.3: the HTTP fast path's answers written from the upstream's own answer text (src/gateway/answer-lines.ts,
// as the stdio fast path writes them): an HTTP upstream's SSE answer is stamped where it is read
// (upstream-raw-post.ts `readMessage`) and the 2025-era session's SSE event written from it (http-fast.ts). A
// hand-written 2025-era HTTP upstream writes each `tools/call` answer as the text the call names; seeded random
// results (escapes, unicode, numbers, nested objects, `_meta`), written in JSON.stringify's form and in others,
// must reach the client byte for byte as with the splice off (JSON.stringify of the same object: the bytes before).
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type * as AnswerLines from '../../src/gateway/answer-lines.js';
import { answerLineOf } from '../../src/gateway/answer-lines.js';
import { readBodyMessage, readMessage } from '../../src/gateway/upstream-raw-post.js';
import { cleanupsAfterEach } from '../harness.js';
import { rootObject, trickyString, tree, Writer, type Tree } from '../json-writer.js';
import { gatewayInFront, handUpstream } from './fixtures/hand-upstream.js';

/** The splice switched on and off by the test, and what it gave (a string: taken). */
const splice = vi.hoisted(() => ({ on: true, taken: 0, refused: 0 }));
vi.mock('../../src/gateway/answer-lines.js', async (importOriginal) => {
  const real = await importOriginal<typeof AnswerLines>();
  return {
    ...real,
    answerTextOf: (message: object): string | undefined => {
      const text = splice.on ? real.answerTextOf(message) : undefined;
      if (text === undefined) splice.refused++;
      else splice.taken++;
      return text;
    },
  };
});

const cleanups = cleanupsAfterEach();

/**
 * A 2025-era Streamable HTTP upstream by hand: `initialize` and `tools/list` (one tool, `give`) in JSON, a
 * `tools/call` of `give` answered on SSE with its `line` argument as the event's data (`__ID__` the request's id),
 * anything else a JSON-RPC error (the gateway's `server/discover` probe: not a 2026-07-28 server).
 */
const lineUpstream = handUpstream(
  'line-upstream',
  [{ name: 'give', inputSchema: { type: 'object' } }],
  (id, args, res) => {
    const line = (args as { line?: string } | undefined)?.line;
    if (line === undefined) return false;
    res
      .writeHead(200, { 'content-type': 'text/event-stream' })
      .end(`event: message\ndata: ${line.replaceAll('__ID__', JSON.stringify(id))}\n\n`);
    return true;
  },
);

/** The gateway (fast path on) in front of {@link lineUpstream}: a POST's answer text. */
const gatewayOverLines = (): Promise<(body: Record<string, unknown>) => Promise<string>> =>
  gatewayInFront(cleanups, lineUpstream, 'l', 'l:give');

/** A `tools/call` of `give` whose answer the upstream writes as `line`. */
const give = (id: number, line: string) => ({
  id,
  method: 'tools/call',
  params: { name: 'l:give', arguments: { line } },
});

/** What the fast path wrote before: the SSE event of JSON.stringify of the answer, the result as JSON.parse reads it. */
const before = (id: number, line: string): string =>
  `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result: (JSON.parse(line.replace('__ID__', '"toolgate-raw:1"')) as { result: unknown }).result })}\n\n`;

/**
 * Escapes JSON.stringify does not write, each alone in an otherwise canonical text (the Writer's odd forms come with
 * whitespace and numbers besides): a `/` or `é` occurs only inside strings, `\u001f` only as an escape.
 */
const ESCAPES: readonly ((line: string) => string)[] = [
  (line) => line,
  (line) => line,
  (line) => line.replaceAll('/', '\\/'),
  (line) => line.replaceAll('é', '\\u00e9'),
  (line) => line.replaceAll('\\u001f', '\\u001F'),
];

describe("the HTTP fast path's answers written from the upstream's own text", { timeout: 60_000 }, () => {
  it("readMessage stamps a raw answer's result with its text (an SSE event's data), not a parsed body's", () => {
    const line =
      '{"result":{"content":[{"type":"text","text":"é \\n 😀 \\u001f"}],"_meta":{"k":[1,0.5]}},"jsonrpc":"2.0","id":"toolgate-raw:4"}';
    const fromText = readMessage(line, 'toolgate-raw:4') as { result: object };
    const message = { jsonrpc: '2.0', id: 9, result: fromText.result };
    expect(answerLineOf(message)).toBe(`${JSON.stringify(message)}\n`);
    // A message of a JSON body comes parsed already (its text may hold several): no text to write it from.
    const fromBody = readBodyMessage(JSON.parse(line), 'toolgate-raw:4') as { result: object };
    expect(answerLineOf({ jsonrpc: '2.0', id: 9, result: fromBody.result })).toBeUndefined();
    // An answer the SDK's schema reads (not a raw one: another id) is a copy: no stamp.
    const other = readMessage(line.replace('toolgate-raw:4', 'sdk-1'), 'sdk-1') as { result: object };
    expect(answerLineOf({ jsonrpc: '2.0', id: 9, result: other.result })).toBeUndefined();
  });

  it("a 2025-era session's answer is the upstream's text under the client's id, as JSON.stringify wrote it", async () => {
    const send = await gatewayOverLines();
    const line =
      '{"result":{"content":[{"type":"text","text":"a/b \\"q\\" é 😀 \u2028"}],"structuredContent":{"n":[1e+21,-1.5,0]}},"jsonrpc":"2.0","id":__ID__}';
    splice.taken = 0;
    expect(await send(give(7, line))).toBe(before(7, line));
    expect(splice.taken).toBe(1);
    // Not the stringify form (a space, `\/`): JSON.stringify writes it, as before.
    splice.taken = 0;
    for (const odd of [line.replace('"n":', '"n": '), line.replace('a/b', 'a\\/b')])
      expect(await send(give(8, odd))).toBe(before(8, odd));
    expect(splice.taken).toBe(0);
  });

  it('answers random results byte for byte as with the splice off (seeded)', async () => {
    const send = await gatewayOverLines();
    splice.taken = 0;
    splice.refused = 0;
    let n = 0;
    const text = (s: string): Tree => ({
      kind: 'object',
      entries: [
        ['type', { kind: 'leaf', value: 'text' }],
        ['text', { kind: 'leaf', value: s }],
      ],
    });
    const result = fc
      .record(
        {
          content: fc.array(trickyString.map(text), { maxLength: 3 }),
          structuredContent: rootObject,
          _meta: fc.oneof(
            rootObject,
            fc.constant<Tree>({ kind: 'object', entries: [['trace', { kind: 'leaf', value: 'x' }]] }),
          ),
          isError: fc.boolean().map((value): Tree => ({ kind: 'leaf', value })),
          extra: tree,
          note: fc.constant<Tree>({ kind: 'leaf', value: 'a/b é \u001f' }),
        },
        { requiredKeys: ['content'] },
      )
      .chain((members) => fc.shuffledSubarray(Object.entries(members), { minLength: Object.keys(members).length }))
      .map((entries): Tree => ({
        kind: 'object',
        entries: entries.map(([k, v]) => [k, k === 'content' ? { kind: 'array', items: v as Tree[] } : (v as Tree)]),
      }));
    await fc.assert(
      fc.asyncProperty(
        result,
        fc.array(fc.nat(), { minLength: 32, maxLength: 64 }),
        fc.constantFrom(0, 0, 0, 0.02, 0.1),
        fc.boolean(),
        fc.constantFrom(...ESCAPES),
        async (value, choices, rate, resultFirst, escape) => {
          const writer = new Writer(choices, rate);
          const members = [`"jsonrpc":"2.0"`, `"id":__ID__`, `"result":${writer.value(value)}`];
          const line = escape(`{${(resultFirst ? [2, 0, 1] : [0, 1, 2]).map((i) => members[i]!).join(',')}}`);
          const id = ++n;
          splice.on = true;
          const spliced = await send(give(id, line));
          splice.on = false;
          const stringified = await send(give(id, line));
          splice.on = true;
          expect(spliced).toBe(stringified);
        },
      ),
      { numRuns: 150, seed: 20261207 },
    );
    // Both ways were taken often (each run's second answer is a refusal: the splice off; integer keys, odd forms
    // and escapes send about four results in five to JSON.stringify).
    expect(splice.taken).toBeGreaterThan(150 / 10);
    expect(splice.refused - 150).toBeGreaterThan(150 / 10);
  });
});
