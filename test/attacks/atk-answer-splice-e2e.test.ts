// Attacks on the fast path's answers written from the upstream's own line (src/gateway/answer-lines.ts, branch
// answer5), through the real `toolgate gateway` process and a hand-written stdio upstream that writes exactly
// the lines each call names (fixtures/atk-splice-server.ts). Every answer the client gets must be, byte for
// byte, the line the fast path wrote before the splice: JSON.stringify of `{ jsonrpc, id, result }`, the
// result as JSON.parse read the upstream's line (`resultType` dropped, as the 2025 codec drops it) — or, where
// the gateway refuses or alters the result (output schema, a result for another request, a cancelled call), not
// the upstream's text at all.
import { describe, expect, it } from 'vitest';
import { spliceGateway } from './fixtures/splice-gateway.js';

/** The gateway in front of the hand-written upstream, all allowed. */
const rawGateway = (env?: NodeJS.ProcessEnv) => spliceGateway(env === undefined ? {} : { env });

/** What the fast path wrote before the splice for a result the upstream wrote as `upstreamLine`. */
function before(id: number, upstreamLine: string): string {
  const result = (JSON.parse(upstreamLine) as { result: Record<string, unknown> }).result;
  const { resultType: _dropped, ...rest } = result;
  return JSON.stringify({ jsonrpc: '2.0', id, result: 'resultType' in result ? rest : result });
}

/** An upstream answer line in JSON.stringify's own form (so the splice is taken) with `result` as its text. */
const line = (result: string): string => `{"jsonrpc":"2.0","id":__ID__,"result":${result}}`;

const text = (t: string): string => JSON.stringify({ content: [{ type: 'text', text: t }] });

/** Results an upstream may write; each in a form the splice takes, or one it must refuse. */
const RESULTS: readonly string[] = [
  text('plain'),
  text('sep \u2028 and \u2029, del \u007f, bom \ufeff, emoji 😀, nbsp \u00a0'),
  text('controls \u0000 \u0001 \u000b \u001f \b \f \n \r \t " \\ /'),
  // A second JSON-RPC message inside a string (escaped: a raw newline cannot be in a JSON string).
  text('}\n{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"smuggled"}]}}'),
  '{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":{"__proto__":{"polluted":1},"constructor":"c","toJSON":"t","valueOf":1}}}',
  '{"content":[],"structuredContent":{"n":[1e+21,5e-324,-1.5e-7,0.1,9007199254740991,-9007199254740991,1.7976931348623157e+308,0,-1]}}',
  // Forms JSON.stringify does not write: the splice must step aside.
  '{"content":[],"structuredContent":{"n":[1e21,-0,1.0,1E+21,0.10,9007199254740993]}}',
  '{"content":[],"structuredContent":{"a":1,"a":2}}',
  '{"content":[],"structuredContent":{"a":{"b":1,"b":2},"c":{}}}',
  // (an own `__proto__` directly in structuredContent sends the result through zod, which drops it: not here)
  '{"content":[],"structuredContent":{"y":{"__proto__":1},"x":{"__proto__":2,"__proto__":3}}}',
  '{"content":[],"structuredContent":{"b":1,"2":2,"-1":3,"1.5":4}}',
  '{"content":[{"type":"text","text":"\\/ \\u0041 \\u001F \\ud800 \\ud83d\\ude00 \\u2028"}]}',
  '{"content":[{"type":"text","text":"\\u000a\\u0008\\u0009\\u000c\\u000d\\u0022\\u005c"}]}',
  // Escaped backslashes before a slash, a u, a quote.
  text('\\/ \\u0041 \\" \\\\'),
  '{"content":[{"type":"text","text":"\\\\\\/"}]}',
  // Depth at and past the splice's limit.
  `{"content":[],"structuredContent":{"d":${'['.repeat(62)}${']'.repeat(62)}}}`,
  `{"content":[],"structuredContent":{"d":${'['.repeat(63)}${']'.repeat(63)}}}`,
  `{"content":[],"structuredContent":{"d":${'{"a":'.repeat(80)}1${'}'.repeat(80)}}}`,
  // Key orders the SDK's schema would not write (the fast path hands the result on as parsed).
  '{"isError":false,"content":[{"text":"x","type":"text"}],"_meta":{"k":"v","z":[true,false,null]}}',
  '{"_meta":{},"structuredContent":{},"content":[{"text":"","type":"text","_meta":{"": ""}}]}',
  // An error result (forwarded as it came).
  '{"content":[{"type":"text","text":"failed"}],"isError":true}',
  // A 2025 codec drops `resultType`: the result is a copy, not the parsed object.
  '{"resultType":"complete","content":[{"type":"text","text":"typed"}]}',
  '{"content":[{"type":"text","text":"after"}],"resultType":"complete"}',
];

describe('answer-lines splice through the gateway (attacks)', () => {
  it('answers every tricky upstream result byte for byte as before the splice', async () => {
    const gw = await rawGateway();
    const got: unknown[] = [];
    const want: unknown[] = [];
    for (const result of RESULTS) {
      const upstream = line(result);
      const { id, answered } = gw.request('tools/call', { name: 'a:say', arguments: { lines: [upstream] } });
      got.push([result, await answered]);
      want.push([result, before(id, upstream.replace('__ID__', '"toolgate-raw:1"'))]);
    }
    expect(got).toEqual(want);
  }, 120_000);

  it('resources/read: tricky texts byte for byte as before', async () => {
    const gw = await rawGateway();
    for (const t of ['plain', 'sep \u2028 \u0000 \u001f 😀 "q" \\', '\\/ \\u0041']) {
      const contents = (uri: string) => JSON.stringify({ contents: [{ uri, text: t, mimeType: 'text/plain' }] });
      // The URI names the lines, which name the URI: the upstream writes the URI it was asked for.
      const upstream = line(contents('__URI__'));
      const encoded = Buffer.from(JSON.stringify({ lines: [upstream] })).toString('base64url');
      const uri = `atk://r/${encoded}`;
      const real = upstream.replace('__URI__', uri);
      const encoded2 = Buffer.from(JSON.stringify({ lines: [real] })).toString('base64url');
      const uri2 = `atk://r/${encoded2}`;
      const real2 = upstream.replace('__URI__', uri2);
      // The upstream answers with `uri` inside while asked for `uri2` (an upstream may answer any URI).
      const { id, answered } = gw.request('resources/read', { uri: uri2 });
      const got = await answered;
      expect(got).toEqual(before(id, real.replace('__ID__', '"toolgate-raw:1"')));
      expect(real2).not.toEqual(real);
    }
  }, 120_000);

  it('an output schema the result breaks: an error, never the upstream text', async () => {
    const gw = await rawGateway();
    for (const result of [
      '{"content":[],"structuredContent":{"n":"not a number"}}',
      '{"content":[{"type":"text","text":"no structured content"}]}',
      '{"content":[],"structuredContent":{"m":1}}',
    ]) {
      const { answered } = gw.request('tools/call', { name: 'a:typed', arguments: { lines: [line(result)] } });
      const got = JSON.parse(await answered) as { error?: unknown; result?: { isError?: boolean } };
      expect(got.error !== undefined || got.result?.isError === true).toBe(true);
      expect(JSON.stringify(got)).not.toContain(result);
    }
    const ok = line('{"content":[],"structuredContent":{"n":1e+21}}');
    const { id, answered } = gw.request('tools/call', { name: 'a:typed', arguments: { lines: [ok] } });
    expect(await answered).toEqual(before(id, ok.replace('__ID__', '"toolgate-raw:1"')));
  }, 120_000);

  it("two calls in flight, the upstream swapping their answers: each client id gets its own call's raw result", async () => {
    const gw = await rawGateway();
    const first = gw.request('tools/call', { name: 'a:say', arguments: { stash: 'a', lines: [] } });
    await new Promise((r) => setTimeout(r, 300));
    // The second call answers the first's raw id with B's result and its own with A's, then the first again.
    const A = text('for the first call');
    const B = text('for the second call');
    const second = gw.request('tools/call', {
      name: 'a:say',
      arguments: {
        lines: [
          `{"jsonrpc":"2.0","id":__ID:a__,"result":${B}}`,
          `{"jsonrpc":"2.0","id":__ID__,"result":${A}}`,
          `{"jsonrpc":"2.0","id":__ID:a__,"result":${text('late duplicate')}}`,
          `{"jsonrpc":"2.0","id":"toolgate-raw:999999","result":${text('for no one')}}`,
        ],
      },
    });
    expect(await first.answered).toEqual(JSON.stringify({ jsonrpc: '2.0', id: first.id, result: JSON.parse(B) }));
    expect(await second.answered).toEqual(JSON.stringify({ jsonrpc: '2.0', id: second.id, result: JSON.parse(A) }));
    await new Promise((r) => setTimeout(r, 300));
    expect(gw.all.join('\n')).not.toContain('late duplicate');
    expect(gw.all.join('\n')).not.toContain('for no one');
  }, 120_000);

  it('a call cancelled before its answer is not answered; progress before the result is relayed first', async () => {
    const gw = await rawGateway();
    const late = text('answered after the cancellation');
    const cancelled = gw.request('tools/call', {
      name: 'a:say',
      arguments: { lines: [line(late)], delayMs: 500 },
    });
    await new Promise((r) => setTimeout(r, 150));
    gw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: cancelled.id } });
    await new Promise((r) => setTimeout(r, 1000));
    expect(gw.all.join('\n')).not.toContain('answered after the cancellation');
    const progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":__TOKEN__,"progress":1,"total":2}}`;
    const result = line(text('with progress'));
    const { id, answered } = gw.request('tools/call', {
      name: 'a:say',
      arguments: { lines: [progress, result] },
      _meta: { progressToken: 'p1' },
    });
    const got = await answered;
    expect(got).toEqual(before(id, result.replace('__ID__', '"toolgate-raw:1"')));
    const at = gw.all.indexOf(got);
    const notified = gw.all.findIndex((l) => l.includes('notifications/progress') && l.includes('"p1"'));
    expect(notified).toBeGreaterThanOrEqual(0);
    expect(notified).toBeLessThan(at);
  }, 120_000);

  // The SDK path (TOOLGATE_GATEWAY_FAST_PATH=off) never wrote the fast path's bytes (its envelope is
  // `{"result":…,"jsonrpc","id"}`, its results in the schema's key order): what must hold against it is the
  // same JSON value for every result the splice may write.
  it('the same JSON value as the SDK path for every tricky result', async () => {
    const runs: unknown[][] = [];
    for (const env of [process.env, { ...process.env, TOOLGATE_GATEWAY_FAST_PATH: 'off' }]) {
      const gw = await rawGateway(env);
      const values: unknown[] = [];
      for (const result of RESULTS) {
        const { answered } = gw.request('tools/call', { name: 'a:say', arguments: { lines: [line(result)] } });
        const { id: _id, ...rest } = JSON.parse(await answered) as Record<string, unknown>;
        values.push([result, rest]);
      }
      runs.push(values);
      gw.stop();
    }
    expect(runs[0]).toEqual(runs[1]);
  }, 180_000);
});
