// Attacks on the fast path's refused results (main 30654a6, branch `refusals`): a malicious 2025-era stdio upstream
// behind a real `toolgate gateway` (src via tsx), the same answers through the fast path and the SDK path
// (TOOLGATE_GATEWAY_FAST_PATH=off), compared as the client reads them, with the audit's tool records.
//
// 1. A refusal by the tool's output schema was not cut (raw-results.ts boundedRefusal cuts only the SDK's
//    InvalidResult): the upstream writes the schema (tools/list) and the content, and the check reports every
//    issue (allErrors), each with its path and the schema's words. 100 required property names of 200 characters
//    and an answer of 200 empty objects (681 bytes) made a 4,807,169-byte answer to the client on both paths (90
//    objects here: 9,000 issues, below the check's bound of 10,000 errors held, src/schema-bounds.ts, past which the
//    refusal is ten issues and never long)
//    (~24 KB per empty object: by arithmetic, 437 pass the 10 MiB line a v2 SDK client reads).
// 2. A result's `_meta` with a malformed `io.modelcontextprotocol/serverInfo` (not an Implementation, or one with
//    keys of its own) reached the client as the upstream wrote it on the fast path: the raw answer skips the SDK's
//    JSON-RPC schema, whose result `_meta` drops an invalid serverInfo (`.catch(undefined)`) and strips an
//    Implementation's unknown keys, and the 2025-era codec's result schema checks neither. The SDK path answered
//    `_meta: {}` (or the serverInfo without the extra key), the fast path the upstream's bytes.
import { parseJSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { readMessage } from '../../src/gateway/upstream-raw-post.js';
import { issuesText, OUTPUT_ISSUES_MAX_CHARS } from '../../src/mcp/output-schemas.js';
import { spliceGateway } from './fixtures/splice-gateway.js';

/** Required property names the upstream's output schema lists: 100 of 200-odd characters. */
const names = Array.from({ length: 100 }, (_, i) => `${'k'.repeat(200)}${i}`);
const amp = {
  name: 'amp',
  outputSchema: { type: 'object', properties: { x: { type: 'array', items: { type: 'object', required: names } } } },
};

const answer = (result: unknown): string => `{"jsonrpc":"2.0","id":__ID__,"result":${JSON.stringify(result)}}`;
const readUri = (lines: readonly string[]): string =>
  `atk://r/${Buffer.from(JSON.stringify({ lines })).toString('base64url')}`;

const INFO = 'io.modelcontextprotocol/serverInfo';
const block = [{ type: 'text', text: 'a' }];
/** Results whose `_meta` holds a serverInfo the SDK's JSON-RPC schema drops or trims. */
const metas: readonly Record<string, unknown>[] = [
  { [INFO]: 5 },
  { [INFO]: 'upstream text' },
  { [INFO]: { name: 'n', version: '1', secret: 'kept by the fast path' } },
  { [INFO]: { name: 'n' } },
  { [INFO]: { name: 'n', version: '1', title: 't' }, k: 'v' },
];

async function run(fast: boolean) {
  const g = await spliceGateway({
    upstreamEnv: { ATK_EXTRA_TOOLS: JSON.stringify([amp]) },
    ...(fast ? {} : { env: { ...process.env, TOOLGATE_GATEWAY_FAST_PATH: 'off' } }),
  });
  const ask = async (method: string, params: Record<string, unknown>) => {
    const line = await g.request(method, params).answered;
    const { id: _id, ...rest } = JSON.parse(line) as Record<string, unknown>;
    return { bytes: Buffer.byteLength(line), answer: rest };
  };
  const refused = await ask('tools/call', {
    name: 'a:amp',
    arguments: { lines: [answer({ content: [], structuredContent: { x: Array.from({ length: 90 }, () => ({})) } })] },
  });
  const metaCalls = [];
  for (const meta of metas)
    metaCalls.push(
      (await ask('tools/call', { name: 'a:say', arguments: { lines: [answer({ content: block, _meta: meta })] } }))
        .answer,
    );
  const metaReads = [];
  for (const meta of metas)
    metaReads.push(
      (
        await ask('resources/read', {
          uri: readUri([answer({ contents: [{ uri: 'atk://x', text: 'a' }], _meta: meta })]),
        })
      ).answer,
    );
  const audit = (await g.finish()).map((r) => ({ status: r['status'], outcome: r['outcome'] }));
  return { refused, metaCalls, metaReads, audit };
}

describe('an upstream against the fast path’s refusals (real gateway, both paths)', { timeout: 120_000 }, () => {
  let both: Promise<[Awaited<ReturnType<typeof run>>, Awaited<ReturnType<typeof run>>]> | undefined;
  const runs = () =>
    (both ??= (async () =>
      [await run(true), await run(false)] as [Awaited<ReturnType<typeof run>>, Awaited<ReturnType<typeof run>>])());

  it('an output-schema refusal is cut as every refusal is, the same words on both paths', async () => {
    const [fast, sdk] = await runs();
    // Bounded (16 KiB of message and the answer's framing), said to be cut.
    for (const side of [fast, sdk]) {
      expect(side.refused.bytes).toBeLessThan(20_000);
      const text = JSON.stringify(side.refused.answer);
      expect(text).toContain("Structured content does not match the tool's output schema");
      expect(text).toMatch(/\(cut: \d+ characters\)/);
    }
    expect(fast.refused.answer).toEqual(sdk.refused.answer);
    expect(fast.audit).toEqual(sdk.audit);
  });

  it('a result’s serverInfo reaches the client as the SDK path reads it (tools/call and resources/read)', async () => {
    const [fast, sdk] = await runs();
    metas.forEach((meta, i) => {
      expect(fast.metaCalls[i], `tools/call _meta ${JSON.stringify(meta)}`).toEqual(sdk.metaCalls[i]);
      expect(fast.metaReads[i], `resources/read _meta ${JSON.stringify(meta)}`).toEqual(sdk.metaReads[i]);
    });
    expect(JSON.stringify([fast.metaCalls, fast.metaReads])).not.toContain('kept by the fast path');
  });
});

describe('issuesText (src/mcp/output-schemas.ts)', () => {
  it('joins short issues as before; cuts long ones within OUTPUT_ISSUES_MAX_CHARS, the cut said', () => {
    expect(issuesText(['/a must be number', '/b must be number'])).toBe('/a must be number; /b must be number');
    expect(issuesText([])).toBe('');
    const many = Array.from({ length: 5000 }, (_, i) => `/x/${i} must have required property 'k'`);
    const text = issuesText(many);
    expect(text).toHaveLength(OUTPUT_ISSUES_MAX_CHARS);
    expect(text.startsWith(many.slice(0, 10).join('; '))).toBe(true);
    expect(text).toMatch(new RegExp(` … \\(cut: ${many.join('; ').length} characters\\)$`));
    const one = 'x'.repeat(OUTPUT_ISSUES_MAX_CHARS * 4);
    expect(issuesText([one])).toHaveLength(OUTPUT_ISSUES_MAX_CHARS);
    expect(issuesText(['x'.repeat(OUTPUT_ISSUES_MAX_CHARS)])).toHaveLength(OUTPUT_ISSUES_MAX_CHARS);
  });
});

describe('readMessage (upstream-raw-post.ts: the raw HTTP answers, the same rawAnswer as stdio)', () => {
  it("hands on a raw answer whose result _meta holds a serverInfo as the SDK's JSON-RPC schema gives it", () => {
    for (const meta of metas)
      for (const result of [
        { content: block, _meta: meta },
        { contents: [{ uri: 'atk://x', text: 'a' }], _meta: meta },
      ])
        for (const id of ['toolgate-raw:1', 7]) {
          const text = JSON.stringify({ jsonrpc: '2.0', id, result });
          expect(readMessage(text, id), text).toEqual(parseJSONRPCMessage(JSON.parse(text)));
        }
  });
});
