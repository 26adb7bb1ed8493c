// A 2026-07-28 tools/call sent raw (src/gateway/upstream-raw-modern.ts) reads its answer's result with the
// SDK Client's own codec and result schema, except a plain complete result, which is given the value those
// schemas would give without running them. Here random results — plain ones and near misses (an own
// `__proto__`, odd members, wrong types, extra keys, another resultType) — are read both ways: the raw reading
// and the SDK Client's funnel (decodeResult, then the era's result schema) must give the same value, member
// order included, or fail with the same error. And the request is enveloped as the Client envelopes it.
import { Client, SdkError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { ToolIndexStore } from '../../src/mcp/index.js';
import { modernWire, plainModernCallResult, plainModernReadResult } from '../../src/gateway/upstream-raw-modern.js';

/** A Client on the 2026-07-28 era (set as a connect would set it), its parts handed over as GatewayClient does. */
class Modern extends Client {
  constructor() {
    super({ name: 'toolgate-gateway', version: '0.2.0' }, { capabilities: { elicitation: { form: {} } } });
    (this as unknown as { _negotiatedProtocolVersion: string })._negotiatedProtocolVersion = '2026-07-28';
  }
  parts() {
    return { envelope: () => this._outboundMetaEnvelope(), codec: () => this._wireCodec() };
  }
  /** What the SDK's funnel resolves for a raw result (manual input rounds), or its error's message. */
  sdk(raw: unknown, method = 'tools/call'): unknown {
    const codec = this._wireCodec();
    const decoded = codec.decodeResult(method, raw);
    if (decoded.kind === 'invalid') return { error: decoded.error.message };
    if (decoded.kind === 'input_required')
      return {
        value: {
          resultType: 'input_required',
          inputRequests: decoded.inputRequests,
          ...(decoded.requestState !== undefined && { requestState: decoded.requestState }),
          ...(decoded._meta !== undefined && { _meta: decoded._meta }),
        },
      };
    const outcome = codec.validateResult(method, decoded.result);
    return outcome.ok
      ? { value: outcome.value }
      : { error: `Invalid result for ${method}: ${outcome.reason === 'invalid' ? outcome.message : ''}` };
  }
}

const INFO = 'io.modelcontextprotocol/serverInfo';

/** A random tools/call result: mostly plain, often one step off it. */
function randomResult(next: () => number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const text = (): Record<string, unknown> => {
    const block: Record<string, unknown> = next() < 0.5 ? { type: 'text', text: 'a' } : { text: 'b', type: 'text' };
    const odd = next();
    if (odd < 0.05) block['annotations'] = { audience: ['user'] };
    else if (odd < 0.1) block['_meta'] = { x: 1 };
    else if (odd < 0.13) block['text'] = 5;
    else if (odd < 0.16) block['type'] = 'image';
    else if (odd < 0.18) Object.defineProperty(block, '__proto__', { value: { x: 1 }, enumerable: true });
    return block;
  };
  const result: Record<string, unknown> = {};
  const members = [
    () => (result['resultType'] = pick(['complete', 'complete', 'complete', 'input_required', 'task', 5, undefined])),
    () => (result['content'] = next() < 0.95 ? Array.from({ length: Math.floor(next() * 3) }, text) : 'no'),
    () => next() < 0.5 && (result['isError'] = pick([true, false, false, 'yes', 0])),
    () => next() < 0.4 && (result['structuredContent'] = pick([{ n: 1 }, { b: 2, a: { c: [1] } }, [1], 'x', null, {}])),
    () =>
      next() < 0.6 &&
      (result['_meta'] = pick([
        { [INFO]: { name: 's', version: '1' } },
        { [INFO]: { version: '1', name: 's' } },
        { [INFO]: { name: 's', version: '1', title: 'T' } },
        { [INFO]: { name: 5, version: '1' } },
        { [INFO]: { name: 's', version: '1' }, x: 1 },
        { progressToken: 't' },
        {},
      ])),
    () => next() < 0.05 && (result['ttlMs'] = 5),
    () => next() < 0.05 && (result['inputRequests'] = {}),
  ];
  // Members in a random order (a plain result's value is in the schema's order whatever the wire's was).
  for (let i = members.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [members[i], members[j]] = [members[j]!, members[i]!];
  }
  for (const member of members) member();
  if (result['resultType'] === undefined) delete result['resultType'];
  return next() < 0.02 ? pick([null, [], 'x']) : result;
}

/** A random resources/read result: mostly plain, often one step off it. */
function randomRead(next: () => number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const item = (): Record<string, unknown> => {
    const one: Record<string, unknown> =
      next() < 0.5 ? { uri: pick(['docs://a', 'file:///x', 'not a uri', '']), text: 't' } : { text: 't', uri: 'a://b' };
    if (next() < 0.4) one['mimeType'] = pick(['text/plain', 'text/plain', 5, '']);
    const odd = next();
    if (odd < 0.05) one['blob'] = 'AA==';
    else if (odd < 0.1) one['_meta'] = { x: 1 };
    else if (odd < 0.13) one['text'] = 5;
    else if (odd < 0.15) delete one['uri'];
    else if (odd < 0.17) Object.defineProperty(one, '__proto__', { value: { x: 1 }, enumerable: true });
    return one;
  };
  const result: Record<string, unknown> = {};
  const members = [
    () => (result['resultType'] = pick(['complete', 'complete', 'complete', 'input_required', 5, undefined])),
    () => (result['contents'] = next() < 0.95 ? Array.from({ length: Math.floor(next() * 3) }, item) : {}),
    () => next() < 0.9 && (result['ttlMs'] = pick([0, 5, 60_000, 60_000, -1, 1.5, '5', 2 ** 60])),
    () => next() < 0.9 && (result['cacheScope'] = pick(['private', 'public', 'private', 'shared', 5])),
    () =>
      next() < 0.6 &&
      (result['_meta'] = pick([
        { [INFO]: { name: 's', version: '1' } },
        { [INFO]: { version: '1', name: 's' } },
        { [INFO]: { name: 's', version: '1', title: 'T' } },
        { x: 1 },
        {},
      ])),
    () => next() < 0.05 && (result['extra'] = 1),
  ];
  for (let i = members.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [members[i], members[j]] = [members[j]!, members[i]!];
  }
  for (const member of members) member();
  if (result['resultType'] === undefined) delete result['resultType'];
  return result;
}

describe('a 2026-07-28 resources/read result read raw, against the SDK Client’s funnel', () => {
  it('gives the same value (member order included) or the same error on random results', () => {
    const client = new Modern();
    const wire = modernWire(client.parts());
    const seed = Date.now() % 100_000;
    const next = prng(seed);
    let plain = 0;
    for (let i = 0; i < 3000; i++) {
      const raw = randomRead(next);
      if (plainModernReadResult(raw)) plain++;
      const expected = client.sdk(structuredClone(raw), 'resources/read');
      let got: unknown;
      try {
        got = { value: wire.result('resources/read', raw, { allowInputRequired: true }) };
      } catch (error) {
        expect(error, `seed ${seed}, ${JSON.stringify(raw)}`).toBeInstanceOf(SdkError);
        got = { error: (error as Error).message };
      }
      expect(JSON.stringify(got), `seed ${seed}, ${JSON.stringify(raw)}`).toBe(JSON.stringify(expected));
    }
    expect(plain).toBeGreaterThan(150);
    expect(plain).toBeLessThan(2700);
  });
});

describe('a 2026-07-28 tools/call result read raw, against the SDK Client’s funnel', () => {
  it('gives the same value (member order included) or the same error on random results', () => {
    const client = new Modern();
    const wire = modernWire(client.parts());
    const seed = Date.now() % 100_000;
    const next = prng(seed);
    let plain = 0;
    for (let i = 0; i < 3000; i++) {
      const raw = randomResult(next);
      if (plainModernCallResult(raw)) plain++;
      const expected = client.sdk(structuredClone(raw));
      let got: unknown;
      try {
        got = { value: wire.result('tools/call', raw, { allowInputRequired: true }) };
      } catch (error) {
        expect(error, `seed ${seed}, ${JSON.stringify(raw)}`).toBeInstanceOf(SdkError);
        got = { error: (error as Error).message };
      }
      expect(JSON.stringify(got), `seed ${seed}, ${JSON.stringify(raw)}`).toBe(JSON.stringify(expected));
    }
    // Both readings were exercised.
    expect(plain).toBeGreaterThan(300);
    expect(plain).toBeLessThan(2700);
  });

  it('skips no cache of the Client: its store (ToolIndexStore) never holds a resources/read', () => {
    // A raw read makes the round trip the SDK Client's readResource would make on a miss, every time.
    const store = new ToolIndexStore();
    const key = { method: 'resources/read', params: 'docs://public/readme' };
    store.set(key, { value: '{"contents":[]}', expiresAt: Date.now() + 60_000, scope: 'public' });
    expect(store.get(key)).toBeUndefined();
  });

  it('refuses an input_required it was not told to take manually (never fulfilled by a raw request)', () => {
    const wire = modernWire(new Modern().parts());
    const raw = { resultType: 'input_required', requestState: 's' };
    expect(() => wire.result('tools/call', raw, {})).toThrow(/does not fulfil rounds/);
  });

  it('envelopes the request as the Client does: its keys first, the request’s own after', () => {
    const client = new Modern();
    const wire = modernWire(client.parts());
    const message = {
      method: 'tools/call',
      params: { name: 'echo', arguments: {}, _meta: { progressToken: 'p' } },
      jsonrpc: '2.0' as const,
      id: 'toolgate-raw:1',
    };
    const sdk = (client as unknown as { _envelopeOutbound(m: unknown): unknown })._envelopeOutbound(message);
    expect(JSON.stringify(wire.envelope(message))).toBe(JSON.stringify(sdk));
  });
});
