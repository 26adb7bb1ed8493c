// Issue 25.2: the fast path's `tools/call` to a 2025-era stdio upstream (upstream-call.ts's RawToolCall: one
// promise from the gate to the raw request, the stop noted by the raw request's own abort listener) answers what
// the SDK path answers, on random upstream answers: results of every shape (text, error results, structured
// content against an output schema or not an object, blocks the spec schema must check, no content, malformed
// results), JSON-RPC errors, progress before the result, and no answer at all (the upstream's call timeout: an
// unknown outcome). The same seeded cases go through `toolgate gateway` with the fast path and with it off
// (TOOLGATE_GATEWAY_FAST_PATH=off); the client's answers — a refusal's words too —, the progress it hears and the
// audit trail must be the same. So must the answers to `resources/read` (the fast path's raw read, upstream-raw.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { spliceGateway } from '../attacks/fixtures/splice-gateway.js';

const CALL_TIMEOUT_MS = 400;

/** A raw JSON-lines client of `toolgate gateway` over stdio; progress lines counted per request. */
async function rawGateway(fast: boolean) {
  const g = await spliceGateway({
    callTimeoutMs: CALL_TIMEOUT_MS,
    ...(fast ? {} : { env: { ...process.env, TOOLGATE_GATEWAY_FAST_PATH: 'off' } }),
  });
  const request = async (method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> =>
    JSON.parse(await g.request(method, params).answered) as Record<string, unknown>;
  const progress = { get: (token: string): number | undefined => g.progress.get(token)?.length };
  return { request, progress, stop: g.finish };
}

/** One call: the tool, the lines the upstream writes for it (`__ID__`, `__TOKEN__` filled in), a progress token. */
interface Case {
  readonly tool: 'say' | 'typed';
  readonly lines: readonly string[];
  readonly token: boolean;
}

const answer = (result: unknown): string => `{"jsonrpc":"2.0","id":__ID__,"result":${JSON.stringify(result)}}`;
const text = fc.string({ maxLength: 12 });
const block = fc.oneof(
  text.map((t) => ({ type: 'text', text: t })),
  fc.constant({ type: 'image', data: 'aGk=', mimeType: 'image/png' }),
  fc.constant({ type: 'text' }), // no text: the spec schema refuses it
);
const fullResult = fc.record(
  {
    content: fc.oneof({ weight: 5, arbitrary: fc.array(block, { maxLength: 2 }) }, { weight: 1, arbitrary: text }),
    isError: fc.oneof(fc.boolean(), fc.constant('yes')),
    structuredContent: fc.oneof(
      fc.record({ n: fc.integer() }),
      fc.record({ n: text }),
      fc.constant({}),
      // Not an object: the SDK path's 2025-era schema refuses it (a record), the neutral spec schema takes it.
      fc.constant([1]),
      fc.constantFrom('s', 1, null),
    ),
    // Another result family's key: without `content`, the SDK path refuses it (no empty success made of it).
    inputRequests: fc.constant({}),
    _meta: fc.oneof(fc.constant({ k: 'v' }), fc.constant('m')),
    resultType: fc.constant('complete'),
  },
  { requiredKeys: ['content'] },
);
/** A result, without `content` one time in four. */
const result = fc.tuple(fullResult, fc.nat(3)).map(([r, k]): Record<string, unknown> => {
  if (k !== 0) return r;
  const { content: _content, ...rest } = r;
  return rest;
});
const error = fc
  .record(
    { code: fc.integer({ min: -32768, max: 1000 }), message: text, data: fc.oneof(text, fc.constant({ why: 1 })) },
    { requiredKeys: ['code', 'message'] },
  )
  .map((e) => `{"jsonrpc":"2.0","id":__ID__,"error":${JSON.stringify(e)}}`);
const progressLine =
  '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":__TOKEN__,"progress":1}}';
const lines = fc.oneof(
  { weight: 8, arbitrary: result.map((r) => [answer(r)]) },
  { weight: 3, arbitrary: error.map((e) => [e]) },
  { weight: 2, arbitrary: result.map((r) => [progressLine, answer(r)]) },
  { weight: 1, arbitrary: fc.constant([] as string[]) }, // never answered: the upstream's call timeout
);
const cases = fc.record({ tool: fc.constantFrom('say', 'typed'), lines, token: fc.boolean() });

/** `resources/read` answers: a plain one, ones the SDK's schema takes as they are or refuses, an error. */
const reads: readonly (readonly string[])[] = [
  [answer({ contents: [{ uri: 'atk://x', text: 'a' }] })],
  [answer({ contents: [{ uri: 'atk://x', blob: 'aGk=', mimeType: 'image/png' }], _meta: { k: 'v' } })],
  [answer({ contents: [{ uri: 'atk://x', text: 1 }] })],
  [answer({ contents: [{ text: 'a' }, { uri: 'atk://x' }] })],
  [answer({ contents: 'x' })],
  [answer({ contents: [], _meta: 'm' })],
  [answer({})],
  [answer({ contents: [], resultType: 'complete' })],
  [answer({ contents: Array.from({ length: 40 }, () => ({ uri: 'atk://x' })) })],
  ['{"jsonrpc":"2.0","id":__ID__,"error":{"code":-32002,"message":"not found","data":{"uri":"atk://x"}}}'],
];

describe('the fast path to a 2025-era stdio upstream answers as the SDK path does', { timeout: 240_000 }, () => {
  it('on random answers (seeded): results, refusals, errors, output schemas, progress, timeouts; reads', async () => {
    const plan: Case[] = fc.sample(cases, { seed: 20261206, numRuns: 60 });
    // Every kind at least once, whatever the sample drew.
    plan.push(
      { tool: 'say', lines: [], token: false },
      { tool: 'typed', lines: [answer({ content: [], structuredContent: { n: 1 } })], token: true },
      { tool: 'typed', lines: [answer({ content: [] })], token: false },
      { tool: 'say', lines: ['{"jsonrpc":"2.0","id":__ID__,"error":{"code":-32000,"message":"no"}}'], token: false },
      { tool: 'say', lines: [answer({ content: [], structuredContent: [1] })], token: false },
      { tool: 'typed', lines: [answer({ content: [], structuredContent: [1] })], token: false },
      { tool: 'typed', lines: [answer({ content: [], structuredContent: [1], isError: true })], token: false },
      { tool: 'say', lines: [answer({ content: [{ type: 'text', text: 'a' }, { type: 'text' }] })], token: false },
      // On main fdf7f94 the fast path answered these three as successes (`content: []`, the foreign key handed on).
      { tool: 'say', lines: [answer({ inputRequests: {} })], token: false },
      { tool: 'say', lines: [answer({ requestState: 's' })], token: false },
      { tool: 'say', lines: [answer({ task: { taskId: 't' } })], token: false },
      { tool: 'say', lines: [answer({ structuredContent: { n: 1 } })], token: false },
      // A refusal longer than REFUSAL_MAX_CHARS (raw-results.ts): cut the same way on both paths.
      { tool: 'say', lines: [answer({ content: Array.from({ length: 40 }, () => ({ type: 'text' })) })], token: false },
    );
    const runs = [];
    for (const fast of [true, false]) {
      const gateway = await rawGateway(fast);
      const answers = [];
      for (const [i, c] of plan.entries()) {
        const meta = c.token ? { _meta: { progressToken: `p${i}` } } : {};
        const message = await gateway.request('tools/call', {
          name: `a:${c.tool}`,
          arguments: { lines: c.lines },
          ...meta,
        });
        const { id: _id, ...rest } = message;
        answers.push({ answer: rest, progress: gateway.progress.get(`p${i}`) ?? 0 });
      }
      for (const lines of reads) {
        const uri = `atk://r/${Buffer.from(JSON.stringify({ lines })).toString('base64url')}`;
        const { id: _id, ...rest } = await gateway.request('resources/read', { uri });
        answers.push({ answer: rest, progress: 0 });
      }
      const audit = (await gateway.stop()).map((r) => ({
        status: r['status'],
        outcome: r['outcome'],
        reason: r['reason'],
        effect: (r['decision'] as { effect?: unknown } | null)?.effect,
      }));
      runs.push({ answers, audit });
    }
    const [fast, sdk] = runs as [(typeof runs)[0], (typeof runs)[0]];
    for (const [i, c] of [...plan, ...reads].entries())
      expect(fast.answers[i], `case ${i}: ${JSON.stringify(c)}`).toEqual(sdk.answers[i]);
    expect(fast.audit).toEqual(sdk.audit);
    // The timeouts were reached on both paths (an unknown outcome, said so to the client and in the audit).
    expect(fast.audit.some((r) => r.outcome === 'unknown')).toBe(true);
  });
});
