/**
 * Issue 25: the gateway hands each request's scope down explicitly (the gate's call id, request options,
 * a per-request exchange) instead of an AsyncLocalStorage. What the scope carries is security-relevant —
 * which client a call's progress, error result and unknown outcome belong to, which exchange a step-up
 * answers — so with many calls in flight at once (on one session and across sessions, both eras, several
 * subjects, interleaved in one upstream, some cancelled, some timing out, some failing) every call must
 * get exactly its own answer, progress, audit record and step-up, never another's; and a tool call that
 * comes with no scope at all is refused, never sent.
 */
import { join } from 'node:path';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import type { ToolAuditRecord } from '../../src/gateway/audit.js';
import {
  cleanupsAfterEach,
  emptyFile,
  gatewayOverHttp,
  inMemoryClient,
  jsonLines,
  modernClient,
  modernRequest,
  ROOT,
  stdioUpstream,
  tempDir,
  until,
  untilListed,
  writePolicy,
} from '../harness.js';

const cleanups = cleanupsAfterEach();
const SCOPE_SERVER = join(ROOT, 'test/gateway/fixtures/scope-server.ts');
const CALL_TIMEOUT_MS = 1500;

function sandbox() {
  const dir = tempDir('call-scope');
  const record = emptyFile(dir, 'record.jsonl');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: {
        s: {
          ...stdioUpstream(SCOPE_SERVER, { RECORD: record }),
          callTimeoutMs: CALL_TIMEOUT_MS,
          connectTimeoutMs: 30_000,
        },
      },
      pin: 'off',
    },
    // A token's caller layer is the tools its scopes name: `secret` needs `admin` (a 2026-07-28 call without
    // it is a step-up, HTTP 403).
    scopes: { use: ['s:whoami', 's:failing', 's:hang'], admin: ['s:secret'] },
    // A call with `ask: true` waits for a person (the client, by elicitation): the gate awaits before the tool runs.
    rules: [
      { name: 'asked', tools: ['s:whoami', 's:failing'], when: { ask: { equals: true } }, result: 'ask' },
      { name: 'rest', result: 'allow' },
    ],
  });
  return { dir, record, policy };
}

/** One call as a client made it, and what it got. */
interface Made {
  readonly client: string;
  readonly tag: string;
  readonly tool: 'whoami' | 'failing' | 'hang' | 'cancelled';
  readonly outcome: { result: CallToolResult } | { error: unknown };
  readonly progress: string[];
}

type Caller = (
  name: string,
  args: Record<string, unknown>,
  options: { onprogress?: (p: { message?: string | undefined }) => void; signal?: AbortSignal },
) => Promise<CallToolResult>;

/**
 * `n` calls by one client at once (`who` its subject, in every tag), a seeded mix: whoami with and without
 * progress, an error result, some asked of a person first where `asks` (the client answers by
 * elicitation, see {@link answering}), and where `slow` is set, one call that outlives the gateway's call
 * timeout and one cancelled by the client midway.
 */
function burst(
  name: string,
  who: string,
  call: Caller,
  n: number,
  seed: number,
  { slow, asks }: { slow: boolean; asks: boolean },
): Promise<Made>[] {
  const random = prng(seed);
  const made: Promise<Made>[] = [];
  for (let i = 0; i < n; i++) {
    const tag = `${who}/${name}/${i}`;
    const ms = Math.floor(random() * 150);
    const pick = random();
    const tool: Made['tool'] =
      slow && i === 0 ? 'hang' : slow && i === 1 ? 'cancelled' : pick < 0.3 ? 'failing' : 'whoami';
    const progress: string[] = [];
    const controller = new AbortController();
    const withProgress = tool === 'whoami' && pick > 0.6;
    const options = {
      ...(withProgress
        ? { onprogress: (p: { message?: string | undefined }) => progress.push(String(p.message)) }
        : {}),
      ...(tool === 'cancelled' ? { signal: controller.signal } : {}),
    };
    if (tool === 'cancelled') setTimeout(() => controller.abort(), 100 + ms);
    const upstreamTool = tool === 'cancelled' ? 'hang' : tool;
    const ask = asks && (tool === 'whoami' || tool === 'failing') && random() < 0.5;
    made.push(
      call(`s:${upstreamTool}`, { tag, ms, ...(ask ? { ask } : {}) }, options).then(
        (result) => ({ client: name, tag, tool, outcome: { result }, progress }),
        (error: unknown) => ({ client: name, tag, tool, outcome: { error }, progress }),
      ),
    );
  }
  return made;
}

/** A client that answers the gateway's questions yes, each after a few milliseconds (calls interleave meanwhile). */
function answering(client: ClientV1, seed: number): ClientV1 {
  const random = prng(seed);
  client.setRequestHandler(ElicitRequestSchema, async () => {
    await sleep(Math.floor(random() * 40));
    return { action: 'accept', content: { approve: true } };
  });
  return client;
}

const ELICITING = { capabilities: { elicitation: { form: {} } } };

const textOf = (result: CallToolResult): string =>
  result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');

/** Each call got its own answer and only its own progress. */
function ownAnswers(made: readonly Made[]): void {
  for (const m of made) {
    for (const message of m.progress) expect(message, `progress of ${m.tag}`).toBe(m.tag);
    if (m.tool === 'cancelled') {
      // The client gave up: its own call is what failed (never another call's answer in its place).
      if ('result' in m.outcome) expect(textOf(m.outcome.result)).toContain(m.tag);
      continue;
    }
    expect('result' in m.outcome, `${m.tag}: ${'error' in m.outcome ? String(m.outcome.error) : ''}`).toBe(true);
    if (!('result' in m.outcome)) continue;
    const result = m.outcome.result;
    if (m.tool === 'whoami') expect([m.tag, result.isError]).toEqual([m.tag, undefined]);
    if (m.tool === 'whoami') expect(textOf(result)).toBe(m.tag);
    // The upstream's own error result, as it gave it for this call.
    if (m.tool === 'failing') expect([result.isError, textOf(result)]).toEqual([true, `failed: ${m.tag}`]);
    // No answer within the call timeout: an unknown outcome, told to this call only.
    if (m.tool === 'hang') {
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/did not answer within 1500 ms: the outcome of the call is unknown/);
    }
  }
}

describe('each call in flight sees its own scope', { timeout: 180_000 }, () => {
  it('many calls at once over HTTP (2025 sessions, 2026-07-28, several subjects) and in memory: own answers, progress, audit, step-ups', async () => {
    const box = sandbox();
    const { url, records, gateway } = await gatewayOverHttp(cleanups, box.policy, {
      http: (set) => ({
        audience: false,
        // The token is "<subject>:<scope>,<scope>…".
        authenticate: async (token) => {
          const [sub, scopes = ''] = token.split(':');
          return { token, clientId: sub!, scopes: scopes.split(',').filter(Boolean) };
        },
        context: (auth) => ({ caller: { id: auth.clientId, scopes: set.toolsForScopes(auth.scopes) } }),
      }),
    });
    const subjects = ['alice', 'bob', 'carol'];
    const calls: Promise<Made>[] = [];
    const starting: Promise<() => Promise<Made>[]>[] = [];
    let seed = 1;
    for (const who of subjects) {
      const token = `${who}:use`;
      starting.push(
        (async () => {
          const legacy = answering(new ClientV1({ name: `legacy-${who}`, version: '1' }, ELICITING), 100 + seed);
          await legacy.connect(new HttpV1(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
          cleanups.push(() => legacy.close());
          await untilListed(legacy, 's:whoami');
          const s = seed++;
          return () =>
            burst(
              'legacy',
              who,
              (name, args, o) => legacy.callTool({ name, arguments: args }, undefined, o) as never,
              10,
              s,
              { slow: true, asks: true },
            );
        })(),
        (async () => {
          const modern = await modernClient(cleanups, url, { token });
          const s = seed++;
          return () =>
            burst('modern', who, (name, args, o) => modern.callTool({ name, arguments: args }, o) as never, 10, s, {
              slow: false,
              asks: false,
            });
        })(),
      );
    }
    for (const mem of ['mem-a', 'mem-b']) {
      const client = answering(await inMemoryClient(cleanups, gateway, ELICITING), 200 + seed);
      const s = seed++;
      starting.push(
        Promise.resolve(() =>
          burst(
            'memory',
            mem,
            (name, args, o) => client.callTool({ name, arguments: args }, undefined, o) as never,
            10,
            s,
            { slow: true, asks: true },
          ),
        ),
      );
    }
    const ready = await Promise.all(starting);
    // Raw 2026-07-28 calls of `secret` interleaved with the rest: without `admin` a step-up (403) for that
    // exchange only, with it the answer; in the plain shape the fast path and its replay serve them, with
    // an experimental capability declared the SDK path (modern.ts's exchange per web Request).
    const stepUps = subjects.flatMap((who, i) =>
      [false, true].flatMap((admin) =>
        [false, true].map(async (sdk) => {
          const tag = `${who}/raw/${admin ? 'admin' : 'use'}/${sdk ? 'sdk' : 'fast'}`;
          const token = admin ? `${who}:use,admin` : `${who}:use`;
          // The allowed ones take a while upstream, the refused ones come in meanwhile.
          if (!admin) await sleep(30);
          const posted = await modernRequest<{ result?: CallToolResult }>(
            url,
            'tools/call',
            { name: 's:secret', arguments: { tag, ms: admin ? 150 : 0 } },
            { token, id: 100 + i, ...(sdk ? { capabilities: { experimental: {} } } : {}) },
          );
          return { tag, admin, posted };
        }),
      ),
    );
    for (const start of ready) calls.push(...start());
    const made = await Promise.all(calls);
    const raw = await Promise.all(stepUps);

    ownAnswers(made);
    // Progress was asked for and relayed somewhere (each to its own call, checked above).
    expect(made.some((m) => m.progress.length > 0)).toBe(true);
    for (const { tag, admin, posted } of raw) {
      if (admin) {
        expect([posted.status, posted.challenge]).toEqual([200, null]);
        expect(textOf(posted.body.result!)).toBe(`secret: ${tag}`);
      } else {
        expect(posted.status).toBe(403);
        expect(posted.challenge).toMatch(/^Bearer error="insufficient_scope", scope="admin"/);
      }
    }
    // Every tool record is its own call's: the caller it names is the subject in the call's tag; a step-up
    // and an unknown outcome only where that call had one.
    // (A call the client cancelled is audited when the gateway has stopped it, which may be after the client moved on.)
    const audited = () => records.filter((r): r is ToolAuditRecord => r.type === 'tool' && r.decision !== null);
    await until('every call audited', () => audited().length >= made.length + raw.length);
    const tools = audited();
    const byTag = new Map(made.map((m) => [m.tag, m]));
    for (const record of tools) {
      const tag = String(record.decision!.parameters?.['tag']);
      const [who, kind] = tag.split('/');
      expect(record.caller, tag).toBe(kind === 'memory' ? null : who);
      expect(record.stepUp !== undefined, tag).toBe(tag.includes('/raw/use/'));
      const m = byTag.get(tag);
      if (record.outcome === 'unknown') expect(['hang', 'cancelled'], tag).toContain(m?.tool);
      if (m?.tool === 'whoami' || m?.tool === 'failing') expect(record.outcome, tag).toBeUndefined();
    }
    // Every call made was audited once, with its own status.
    expect(tools.length).toBe(made.length + raw.length);
    for (const m of made.filter((x) => x.tool === 'whoami' || x.tool === 'failing'))
      expect(tools.filter((r) => r.decision!.parameters?.['tag'] === m.tag).map((r) => r.status)).toEqual([
        m.tool === 'whoami' ? 'ok' : 'error',
      ]);
    // What reached the upstream: each call once, and no refused step-up.
    const reached = jsonLines<{ tool: string; tag: string }>(box.record);
    expect(reached.filter((r) => r.tag.includes('/raw/use/'))).toEqual([]);
    expect(new Set(reached.map((r) => r.tag)).size).toBe(reached.length);
  });

  it('one stdio session with many calls in flight (the fast path): own answers and progress', async () => {
    const box = sandbox();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'gateway', '--policy', box.policy],
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const client = answering(new ClientV1({ name: 'stdio', version: '1' }, ELICITING), 300);
    await client.connect(transport);
    cleanups.push(() => client.close());
    await untilListed(client, 's:whoami', () => stderr);
    const calls = (name: string, args: Record<string, unknown>, o: Parameters<Caller>[2]) =>
      client.callTool({ name, arguments: args }, undefined, o) as never;
    const made = await Promise.all([
      ...burst('stdio', 'one', calls, 20, 7, { slow: true, asks: true }),
      ...burst('stdio', 'two', calls, 20, 8, { slow: false, asks: true }),
    ]);
    ownAnswers(made);
    expect(made.some((m) => m.progress.length > 0)).toBe(true);
  });

  it('a tool call that comes with no request scope is refused and never reaches the upstream', async () => {
    const box = sandbox();
    const { gateway } = await gatewayOverHttp(cleanups, box.policy);
    const client = await inMemoryClient(cleanups, gateway);
    await untilListed(client, 's:whoami');
    const tool = gateway.registry.get('s:whoami')!;
    // Run as the gate would, but outside any client's request: no scope is registered for this call id.
    const outside = Promise.resolve(
      tool.execute({ tag: 'outside' }, { callId: 'mcp-not-a-request', signal: new AbortController().signal }),
    );
    await expect(outside).rejects.toThrow(/outside a client's request; refused, nothing was sent/);
    // The same tool through a client's request runs.
    expect(textOf((await client.callTool({ name: 's:whoami', arguments: { tag: 'inside' } })) as CallToolResult)).toBe(
      'inside',
    );
    expect(jsonLines<{ tag: string }>(box.record).map((r) => r.tag)).toEqual(['inside']);
  });
});
