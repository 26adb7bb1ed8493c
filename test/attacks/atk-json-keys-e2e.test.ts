// V8 12.8 to at least 14.6 (Node 24 and 26, not 20 or 22) reads an escaped object key of JSON.parse through a map
// transition an earlier parse left when the key's raw text starts with that transition's key (nodejs/node#63785):
// after `{"h":[],"\\":0}` anywhere in the process, `{"h":1,"\"":2}` reads its second key as `\`. Through the real
// `toolgate gateway` process, one request of the client poisons the gateway's parse, the next is then decided on
// keys other than the ones its text holds. On Node 20 and 22 these pass on any code; on Node 24 they failed
// before src/json-text.ts (the gateway's outside texts read by parseJsonText).
import { describe, expect, it } from 'vitest';
import { spliceGateway } from './fixtures/splice-gateway.js';

/** An upstream answer line in JSON.stringify's own form (so the splice is taken) with `result` as its text. */
const line = (result: string): string => `{"jsonrpc":"2.0","id":__ID__,"result":${result}}`;
const text = (t: string): string => JSON.stringify({ content: [{ type: 'text', text: t }] });

describe('escaped keys read as written through the gateway (nodejs/node#63785)', () => {
  it('the answer splice: structured content the output schema refuses never reaches the client', async () => {
    const gw = await spliceGateway();
    // The poison: the client's own arguments holding an object whose keys are `h` then `\` (the last: a key after
    // it takes the poison away; the say tool takes any key).
    await gw.request('tools/call', { name: 'a:say', arguments: { lines: [line(text('ok'))], p: { h: [], '\\': 0 } } })
      .answered;
    // `quoted`'s output schema wants a number under the key `"`; the upstream's line holds a string there. Read
    // as `\`, the key escaped the check, and the splice wrote the upstream's own text to the client.
    const result = '{"content":[],"structuredContent":{"h":1,"\\"":"not a number"}}';
    const got = await gw.request('tools/call', { name: 'a:quoted', arguments: { lines: [line(result)] } }).answered;
    expect(got).not.toContain('not a number');
    expect(got).toContain('output schema');
  }, 60_000);

  it('a deny rule on `path`: a call writing the key with an escape is refused, not run', async () => {
    const gw = await spliceGateway({
      rules: [
        { name: 'no-etc', tools: 'a:say', when: { path: { path: '/etc/**' } }, result: 'deny' },
        { name: 'all', result: 'allow' },
      ],
    });
    // The poison: the key `pat\` after `lines` (allowed: it is not `path`).
    const ok = await gw.request('tools/call', { name: 'a:say', arguments: { lines: [line(text('ok'))], 'pat\\': 0 } })
      .answered;
    expect(ok).toContain('"ok"');
    // `pat\u0068` is `path`; its raw text starts with `pat\`: read as that key, no rule saw a path.
    const ran = JSON.stringify(line(text('ran')));
    const got = await gw.requestLine(
      (id) =>
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"a:say","arguments":{"lines":[${ran}],"pat\\u0068":"/etc/passwd"}}}`,
    ).answered;
    expect(got).not.toContain('"ran"');
    expect(got).toContain('no-etc');
  }, 60_000);
});
