// Attacking the HTTP fast path's answer splice (issue 25.3, branch gwsplice): a malicious 2025-era HTTP upstream
// whose SSE answer parses to one object and would splice to other bytes. The splice (answer-lines.ts
// `answerTextOf`, stamped in upstream-raw-post.ts `readMessage`) must give the client exactly the bytes it gives
// with the splice off (JSON.stringify of the checked message): the SSE framing around the answer (CRLF or CR line
// ends, a BOM, `data:` split over lines, comments, ids, an event of another name, a progress notification first,
// a second answer or an error after it), result texts JSON.stringify writes otherwise (duplicate, escaped, integer
// and `__proto__` keys, -0, long numbers, deep nesting, `resultType`, a `_meta` the schema reads), a result the
// output-schema check refuses, and a JSON body instead of SSE. The branch's own tests write one canonical event.
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type * as AnswerLines from '../../src/gateway/answer-lines.js';
import { answerLineOf } from '../../src/gateway/answer-lines.js';
import { readMessage } from '../../src/gateway/upstream-raw-post.js';
import { cleanupsAfterEach } from '../harness.js';
import { gatewayInFront, handUpstream } from './fixtures/hand-upstream.js';

/** The splice switched on and off by the test, and what it gave (a string: taken). */
const splice = vi.hoisted(() => ({ on: true, taken: 0 }));
vi.mock('../../src/gateway/answer-lines.js', async (importOriginal) => {
  const real = await importOriginal<typeof AnswerLines>();
  return {
    ...real,
    answerTextOf: (message: object): string | undefined => {
      const text = splice.on ? real.answerTextOf(message) : undefined;
      if (text !== undefined) splice.taken++;
      return text;
    },
  };
});

const cleanups = cleanupsAfterEach();

/** The answer stream a resumption (GET with Last-Event-ID) is given, once. */
const resumed: { body: string | undefined } = { body: undefined };

/** The output schema of the tool `shaped`: a number `n`. */
const SHAPED = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] };

/**
 * The output schema of the tool `defaulted`: members with a `default` (a check that filled them in would change the
 * checked object in place, keys more: with duplicate keys in the text the counts would agree again).
 */
const DEFAULTED = {
  type: 'object',
  properties: { n: { type: 'number' }, m: { type: 'number', default: 5 }, o: { type: 'object', default: {} } },
};

/**
 * A 2025-era Streamable HTTP upstream by hand: `initialize` and `tools/list` (`give`, `shaped` and `defaulted` with an
 * output schema) in JSON, a `tools/call` answered with its `body` argument as the whole response body (`__ID__` the
 * request's id) under its `type` argument's Content-Type (SSE by default); anything else a JSON-RPC error.
 */
const bodyUpstream = handUpstream(
  'body-upstream',
  [
    { name: 'give', inputSchema: { type: 'object' } },
    { name: 'shaped', inputSchema: { type: 'object' }, outputSchema: SHAPED },
    { name: 'defaulted', inputSchema: { type: 'object' }, outputSchema: DEFAULTED },
  ],
  (id, called, res) => {
    const args = called as { body?: string; type?: string; resume?: string; nested?: boolean } | undefined;
    if (args?.body === undefined) return false;
    if (args.resume !== undefined) resumed.body = args.resume.replaceAll('__ID__', JSON.stringify(id));
    res
      .writeHead(200, { 'content-type': args.type ?? 'text/event-stream' })
      // nested: the body holds the message inside a JSON string, its id escaped as such.
      .end(args.body.replaceAll('__ID__', nested(JSON.stringify(id), args.nested === true)));
    return true;
  },
  // A resumption (GET naming the last event id) of a stream that closed before its answer: the answer held for it.
  (req, res) => {
    if (req.method !== 'GET' || req.headers['last-event-id'] === undefined || resumed.body === undefined) return false;
    const body = resumed.body;
    resumed.body = undefined;
    res.writeHead(200, { 'content-type': 'text/event-stream' }).end(body);
    return true;
  },
);

/** `text` as it stands inside a JSON string when `inside`, else as it is. */
const nested = (text: string, inside: boolean): string => (inside ? JSON.stringify(text).slice(1, -1) : text);

/** The gateway (fast path on, or off) in front of {@link bodyUpstream}: a POST's answer text. */
const gatewayOverBodies = (fast = true): Promise<(body: Record<string, unknown>) => Promise<string>> =>
  gatewayInFront(cleanups, bodyUpstream, 'b', 'b:shaped', fast);

/** A `tools/call` of `tool` whose answer body the upstream writes as `body` (Content-Type `type`). */
const call = (id: number, tool: string, body: string, type?: string, resume?: string, twice?: boolean) => ({
  id,
  method: 'tools/call',
  params: {
    name: `b:${tool}`,
    arguments: {
      body,
      ...(type === undefined ? {} : { type }),
      ...(resume === undefined ? {} : { resume }),
      ...(twice === undefined ? {} : { nested: twice }),
    },
  },
});

/** The answer message `{"jsonrpc":"2.0","id":__ID__,"result":<result>}` in its canonical form. */
const answer = (result: string): string => `{"jsonrpc":"2.0","id":__ID__,"result":${result}}`;

/**
 * Result texts an upstream may write that JSON.stringify of their parse writes otherwise (or that the gateway reads
 * through the SDK's schema, or refuses): each must reach the client as with the splice off.
 */
const RESULTS: readonly string[] = [
  '{"content":[{"type":"text","text":"plain"}]}',
  // A duplicate key: the last value wins in the object, both are in the text.
  '{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"second"}]}',
  '{"content":[],"structuredContent":{"a":1,"a":2}}',
  '{"content":[],"structuredContent":{"a":{"x":1,"y":2},"a":{"z":3}}}',
  '{"content":[{"type":"text","text":"a"}],"isError":false,"isError":true}',
  // Escaped keys (Node 24's JSON.parse may misread them; JSON.stringify writes them unescaped).
  '{"\\u0063ontent":[{"type":"text","text":"esc"}]}',
  '{"content":[],"structuredContent":{"h":[],"\\\\":0}}',
  '{"content":[],"structuredContent":{"h":1,"\\"":2}}',
  '{"content":[],"structuredContent":{"a\\nb":1,"\\u001f":2,"\\b":3}}',
  // Keys V8 orders first, or that are no plain member.
  '{"content":[],"structuredContent":{"b":1,"1":2,"0":3}}',
  '{"content":[],"structuredContent":{"x":{"__proto__":{"polluted":1}}}}',
  '{"content":[],"structuredContent":{"__proto__":{"polluted":1}}}',
  '{"content":[],"__proto__":{"isError":true}}',
  '{"content":[],"structuredContent":{"toJSON":"x","then":1}}',
  // Numbers JSON.stringify writes otherwise.
  '{"content":[],"structuredContent":{"n":-0}}',
  '{"content":[],"structuredContent":{"n":12345678901234567890}}',
  '{"content":[],"structuredContent":{"n":1e400}}',
  '{"content":[],"structuredContent":{"n":1E21,"m":1.50,"k":0.0000001}}',
  // Strings: escapes JSON.stringify does not write, characters it writes raw, lone surrogates.
  '{"content":[{"type":"text","text":"\\u2028 \u2028 \\/ / \\ud800 \\uDFFF \\u00e9"}]}',
  '{"content":[{"type":"text","text":"\\ud83d\\ude00"}]}',
  // Deep nesting (past the splice's depth bound, and just within it).
  `{"content":[],"structuredContent":{"d":${'['.repeat(70)}${']'.repeat(70)}}}`,
  `{"content":[],"structuredContent":{"d":${'{"a":'.repeat(60)}1${'}'.repeat(60)}}}`,
  // Results the gateway copies (resultType removed), reads through the SDK's schema, or refuses.
  '{"content":[],"resultType":"complete"}',
  '{"resultType":"complete","content":[{"type":"text","text":"r"}]}',
  '{"content":[],"_meta":{"progressToken":"x"}}',
  '{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"n","version":"1"}}}',
  '{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"n","version":"1","x":1}}}',
  '{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}',
  '{"content":[{"type":"text","text":"t","extra":1}]}',
  '{"content":"not an array"}',
  '{}',
];

/** The same for `shaped` (its output schema: a number `n`): accepted, refused, or read from a duplicate. */
const SHAPED_RESULTS: readonly string[] = [
  '{"content":[],"structuredContent":{"n":1}}',
  '{"content":[],"structuredContent":{"n":"x"}}',
  '{"content":[],"structuredContent":{"n":"x","n":1}}',
  '{"content":[],"structuredContent":{"n":1,"n":"x"}}',
  '{"content":[],"structuredContent":{"n":1},"structuredContent":{"m":1}}',
  '{"content":[],"structuredContent":{"m":1},"structuredContent":{"n":1}}',
  '{"content":[],"isError":true,"structuredContent":{"n":"x"}}',
  '{"content":[],"structuredContent":{"n":-0}}',
  '{"content":[]}',
];

/** The same for `defaulted`: a check that filled in defaults would add keys a duplicate in the text makes up for. */
const DEFAULTED_RESULTS: readonly string[] = [
  '{"content":[],"structuredContent":{"n":1}}',
  '{"content":[],"structuredContent":{"n":1,"n":1}}',
  '{"content":[],"structuredContent":{"n":1,"n":1,"n":1}}',
  '{"content":[],"content":[],"structuredContent":{"n":1}}',
];

/** An SSE body: `lines` ended by `eol`, perhaps after a BOM. */
const sse = (lines: readonly string[], eol = '\n', bom = false): string =>
  (bom ? '\ufeff' : '') + lines.map((line) => line + eol).join('');

/** The `data:` lines of `text` split after each comma named in `at` (the joined data then has a newline there). */
function dataLines(text: string, at: readonly number[], space: boolean): string[] {
  const commas: number[] = [];
  for (let i = text.indexOf(','); i >= 0; i = text.indexOf(',', i + 1)) commas.push(i);
  const cuts = [...new Set(at.map((n) => commas[n % Math.max(commas.length, 1)]).filter((c) => c !== undefined))];
  cuts.sort((a, b) => a! - b!);
  const pieces: string[] = [];
  let from = 0;
  for (const cut of cuts) {
    pieces.push(text.slice(from, cut! + 1));
    from = cut! + 1;
  }
  pieces.push(text.slice(from));
  return pieces.map((piece) => (space ? `data: ${piece}` : `data:${piece}`));
}

/** What may come before the answer's event in its stream. */
const PRELUDES: readonly (readonly string[])[] = [
  [],
  [': keep-alive', ''],
  ['id: e-1', 'retry: 5'],
  ['event: other', `data: ${answer('{"content":[{"type":"text","text":"other event"}]}')}`, ''],
  [
    'event: message',
    'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}',
    '',
  ],
  ['event: message', 'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}', ''],
];

/** What may come after the answer's event in its stream: another answer, an error, to the same id. */
const CODAS: readonly (readonly string[])[] = [
  [],
  ['event: message', `data: ${answer('{"content":[{"type":"text","text":"second answer"}]}')}`, ''],
  ['event: message', 'data: {"jsonrpc":"2.0","id":__ID__,"error":{"code":-32000,"message":"after"}}', ''],
];

describe("the HTTP fast path's spliced answers under a malicious upstream's SSE text", { timeout: 120_000 }, () => {
  it('answers each odd result text (and a refused one) as with the splice off, and splices the plain ones', async () => {
    const send = await gatewayOverBodies();
    let id = 0;
    splice.taken = 0;
    const cases: [string, string][] = [
      ...RESULTS.map((r): [string, string] => ['give', r]),
      ...SHAPED_RESULTS.map((r): [string, string] => ['shaped', r]),
      ...DEFAULTED_RESULTS.map((r): [string, string] => ['defaulted', r]),
    ];
    for (const [tool, result] of cases) {
      const body = sse(['event: message', `data: ${answer(result)}`, '']);
      id++;
      splice.on = true;
      const spliced = await send(call(id, tool, body));
      splice.on = false;
      const stringified = await send(call(id, tool, body));
      splice.on = true;
      expect({ tool, result, answer: spliced }).toEqual({ tool, result, answer: stringified });
      // Never the upstream's own id, never a second event.
      expect(spliced).not.toContain('toolgate-raw:');
      expect(spliced.match(/^data: /gm)?.length ?? 0).toBeLessThanOrEqual(1);
    }
    // The splice ran where the text is JSON.stringify's (the first result, shaped's first and -0-free ones, …).
    expect(splice.taken).toBeGreaterThanOrEqual(3);
  });

  it('a JSON body (several messages, or one) is never spliced: JSON.stringify writes its answer', async () => {
    const send = await gatewayOverBodies();
    splice.taken = 0;
    let id = 100;
    for (const result of RESULTS.slice(0, 4)) {
      for (const body of [answer(result), `[${answer(result)}]`]) {
        id++;
        splice.on = true;
        const spliced = await send(call(id, 'give', body, 'application/json'));
        splice.on = false;
        const stringified = await send(call(id, 'give', body, 'application/json'));
        splice.on = true;
        expect(spliced).toBe(stringified);
      }
    }
    expect(splice.taken).toBe(0);
  });

  it('a JSON body holding a message as a JSON string (alone or in an array) fails the call as the SDK path fails it', async () => {
    // Found by this attack: the fast path read each member of a JSON body as a text to parse again, so a body that
    // is the message JSON-encoded twice was read as the message (the SDK's transport refuses a string).
    const message = answer('{"content":[{"type":"text","text":"double-decoded"}]}');
    const bodies = [JSON.stringify(message), JSON.stringify([message])];
    for (const fast of [false, true]) {
      const send = await gatewayOverBodies(fast);
      for (const [k, body] of bodies.entries()) {
        const text = await send(call(k + 1, 'give', body, 'application/json', undefined, true));
        expect(text, `fast path ${fast ? 'on' : 'off'}: ${body}`).not.toContain('double-decoded');
        expect(text).toMatch(/"isError":true|"error":/);
      }
    }
  });

  it('answers random SSE framings of odd results as with the splice off (seeded)', async () => {
    const send = await gatewayOverBodies();
    let n = 1000;
    splice.taken = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          ...RESULTS.map((r) => ['give', r] as const),
          ...SHAPED_RESULTS.map((r) => ['shaped', r] as const),
        ),
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.boolean(),
        fc.constantFrom(...PRELUDES),
        fc.constantFrom(...CODAS),
        fc.array(fc.nat(), { maxLength: 3 }),
        fc.boolean(),
        fc.constantFrom('event: message', 'event:message', null),
        async ([tool, result], eol, bom, prelude, coda, cuts, space, named) => {
          const lines = [...prelude, ...(named === null ? [] : [named]), ...dataLines(answer(result), cuts, space), ''];
          const body = sse([...lines, ...coda], eol, bom);
          const id = ++n;
          splice.on = true;
          const spliced = await send(call(id, tool, body));
          splice.on = false;
          const stringified = await send(call(id, tool, body));
          splice.on = true;
          expect(spliced).toBe(stringified);
          expect(spliced).not.toContain('toolgate-raw:');
        },
      ),
      { numRuns: 80, seed: 20261207 },
    );
    // Some framings leave the answer's data in JSON.stringify's form (one `data:` line): spliced.
    expect(splice.taken).toBeGreaterThan(0);
  });

  it('a stream resumed with Last-Event-ID (its answer read by the SDK) is answered as with the splice off', async () => {
    const send = await gatewayOverBodies();
    let id = 200;
    for (const result of [RESULTS[0]!, RESULTS[1]!, SHAPED_RESULTS[0]!]) {
      // The POST's stream names an event id and closes before the answer; the GET that resumes it carries it.
      const first = sse([
        'id: e-1',
        'retry: 1',
        'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}',
        '',
      ]);
      const resume = sse(['id: e-2', 'event: message', `data: ${answer(result)}`, '']);
      const tool = result === SHAPED_RESULTS[0] ? 'shaped' : 'give';
      id++;
      splice.on = true;
      splice.taken = 0;
      const spliced = await send(call(id, tool, first, undefined, resume));
      // The resumed answer was read by the SDK's transport (its schema's copy): nothing to splice.
      expect(splice.taken).toBe(0);
      splice.on = false;
      const stringified = await send(call(id, tool, first, undefined, resume));
      splice.on = true;
      expect(spliced).toBe(stringified);
      expect(spliced).toContain('"result"');
    }
  });

  it("an HTTP upstream's event text read by readMessage splices, on either client's side, only to JSON.stringify's bytes", async () => {
    // The stdio fast path (fastpath.ts `answerLineOf`) now gets HTTP upstreams' stamped results too.
    const real = await vi.importActual<typeof AnswerLines>('../../src/gateway/answer-lines.js');
    let taken = 0;
    for (const result of [...RESULTS, ...SHAPED_RESULTS, ...DEFAULTED_RESULTS]) {
      let read: unknown;
      try {
        read = readMessage(answer(result).replace('__ID__', '"toolgate-raw:3"'), 'toolgate-raw:3');
      } catch {
        continue; // refused: nothing to splice
      }
      for (const id of [1, -0, 'x"\\\u2028', 2 ** 53 - 1]) {
        const message = { jsonrpc: '2.0', id, result: (read as { result: unknown }).result };
        const line = answerLineOf(message);
        if (line !== undefined) expect(line).toBe(`${JSON.stringify(message)}\n`);
        const text = real.answerTextOf(message);
        if (text !== undefined) {
          taken++;
          expect(text).toBe(JSON.stringify(message));
        }
      }
    }
    expect(taken).toBeGreaterThan(0);
  });
});
