// The fast path's shape checks against the SDKs' own, on random messages (issue 25.3): whatever
// `plainRequestOf` takes, the SDK v1's JSON-RPC and method schemas take too and hand on unchanged, and
// whatever `plainLegacyPost` calls 2025-era traffic the SDK's era classification (`isLegacyPost`) does too —
// so taking a request off the wire early never serves one the SDK path would refuse or route elsewhere.
import type { IncomingMessage } from 'node:http';
import {
  CallToolRequestSchema,
  JSONRPCRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { plainRequestOf } from '../../src/gateway/fastpath.js';
import { plainLegacyPost } from '../../src/gateway/http-fast.js';
import { isLegacyPost } from '../../src/gateway/http-wire.js';

/** Values of every JSON kind, and some that are not what a field wants. */
const ODD: readonly unknown[] = [
  undefined,
  null,
  0,
  1,
  -1,
  1.5,
  2 ** 60,
  '',
  'x',
  'toolgate-raw:1',
  true,
  [],
  ['a'],
  {},
  { a: 1 },
  JSON.parse('{"__proto__":{"x":1}}'),
];

function message(next: () => number): unknown {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const maybe = (value: unknown): unknown => (next() < 0.8 ? value : pick(ODD));
  const method = next() < 0.9 ? pick(['tools/call', 'resources/read']) : pick(['tools/list', 'initialize', 'x']);
  const params: Record<string, unknown> =
    method === 'resources/read'
      ? { uri: maybe('docs://a/b') }
      : { name: maybe('rec:echo'), arguments: maybe({ a: 1 }) };
  if (next() < 0.3) {
    const meta: Record<string, unknown> = { progressToken: maybe(7) };
    if (next() < 0.3)
      meta[pick(['io.modelcontextprotocol/protocolVersion', 'x', 'progressToken'])] = maybe('2026-07-28');
    params['_meta'] = maybe(meta);
  }
  if (next() < 0.1) params[pick(['task', 'extra', 'cursor'])] = maybe({ ttl: 1 });
  const body: Record<string, unknown> = {
    jsonrpc: maybe('2.0'),
    id: maybe(pick([1, 'a', 0])),
    method,
    params: maybe(params),
  };
  if (next() < 0.1) delete body[pick(['jsonrpc', 'id', 'params'])];
  if (next() < 0.05) body[pick(['result', 'error', 'extra'])] = {};
  return next() < 0.05 ? [body] : body;
}

function request(next: () => number): IncomingMessage {
  const headers: Record<string, string> = {};
  const version = [undefined, '2025-11-25', '2025-06-18', '2026-07-28', 'bogus', '2024-10-07'][Math.floor(next() * 6)];
  if (version !== undefined) headers['mcp-protocol-version'] = version;
  if (next() < 0.2) headers['mcp-method'] = next() < 0.5 ? 'tools/call' : 'tools/list';
  return { method: 'POST', headers } as unknown as IncomingMessage;
}

describe("the fast path's shape checks against the SDKs'", () => {
  it('plainRequestOf takes only what the SDK schemas hand on unchanged; plainLegacyPost only legacy traffic', () => {
    const seed = Date.now() % 100_000;
    const next = prng(seed);
    let taken = 0;
    for (let i = 0; i < 20_000; i++) {
      const body = message(next);
      const plain = plainRequestOf(body);
      if (plain !== undefined) {
        taken++;
        expect(JSONRPCRequestSchema.safeParse(body).success, `seed ${seed}: ${JSON.stringify(body)}`).toBe(true);
        const schema = plain.method === 'tools/call' ? CallToolRequestSchema : ReadResourceRequestSchema;
        const parsed = schema.safeParse(body);
        expect(parsed.success, `seed ${seed}: ${JSON.stringify(body)}`).toBe(true);
        expect(parsed.data?.params, `seed ${seed}: ${JSON.stringify(body)}`).toEqual(
          (body as { params: unknown }).params,
        );
      }
      const req = request(next);
      if (plainLegacyPost(req, body))
        expect(isLegacyPost(req, body), `seed ${seed}: ${JSON.stringify(body)}`).toBe(true);
    }
    expect(taken).toBeGreaterThan(1000);
  });
});
