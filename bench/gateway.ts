/**
 * The gateway over stdio against the same upstream called directly (issue 25.2), real processes: an SDK
 * client spawns either the upstream itself or `toolgate gateway --policy FILE --audit FILE` (the compiled
 * CLI of the bench build, plain node), which spawns the upstream. Upstreams: server-filesystem (a
 * devDependency) for `tools/call` (`read_text_file` of a small file) and `tools/list`; the gateway tests' docs
 * server (test/gateway/fixtures/docs-server.ts, under tsx) for `resources/read`. Requests go one at a time;
 * each side is timed in alternating rounds (direct, gateway, gateway without audit, a bare stdio relay
 * process, …), so the load of the machine falls on all of them alike; per-request percentiles over every
 * request of a side, after 2,500 warm-up calls per side (300 for tools/list; 2,500 per side over HTTP too).
 * The bare relay (no MCP: lines in, parsed, lines out) is the floor of the gateway's two extra pipe hops and
 * third process here.
 *
 * The gateway's own cost is then split by what the bench can measure: `audit` is the gateway with --audit
 * against the gateway without it; `parse` is JSON.parse + JSON.stringify of the request and the answer as
 * they cross it (timed here, on the real bytes); `decide` is the gateway's decision for the call (the same
 * policy in this process, `registry.decide` of the namespaced call); `relay` is the rest (the second hop
 * over stdio, the SDK's Client and Server on both sides of the gateway).
 *
 * More pieces, each timed in this process on the real messages: `validate` is the SDK's zod schemas of the
 * request and the result (CallToolRequestSchema + CallToolResultSchema of SDK v1, what one side of one hop
 * checks; the gateway has a hop on each side); `audit` the JSONL sink writing the gateway's record of this
 * call (frozen, serialised, one write); `pin` the hash of the tool's definition an approval binds (cached per
 * listed definition since issue 25: `pinCached`); `pipe` one round trip of the request line through a child
 * process that echoes stdin to stdout (the floor of the gateway's second stdio hop, no MCP in it); `cpu` the
 * gateway process's own CPU time per `tools/call` over 2,000 calls (utime + stime from /proc), beside the
 * upstream's own when called directly and the bare stdio relay's (the floor the gateway's CPU is read against).
 *
 * Over Streamable HTTP (issue 25.3, and the 2026-07-28 path of issue 23): the test fixtures'
 * `legacy-server.ts --http` (SDK v1, 2025-11-25 sessions) and `modern-server.ts --http` (SDK v2,
 * 2026-07-28 only, stateless) are the upstreams, `echo` the call. Per era, three sides in alternating rounds:
 * the upstream directly (an SDK v1 client in a session; an SDK v2 client pinned to 2026-07-28), through
 * `toolgate gateway --http 0 --no-auth`, and through `toolgate gateway --http 0 --jwks-url …` (a JWKS served
 * by this process, one RS256 token for the gateway's resource with an hour's `exp` for the whole run: verified once, then cached).
 * A fourth side is the floor of any HTTP hop on the machine: a bare relay process (node:http server, keep-alive
 * `http.request` to the upstream, the body read and parsed as JSON, the answer piped back) — no MCP in it;
 * its CPU per call is reported beside the gateway's (on the shared 2-core machine of 2026-12-05, ~550 µs warm: the
 * floor the gateway's own CPU per call is to be read against, not zero).
 *
 * `TOOLGATE_BENCH_GATEWAY=stdio` runs the stdio shapes and their CPU alone (no HTTP, no pieces: those fields
 * are absent or NaN), for work on the stdio path: `TOOLGATE_BENCH_GATEWAY=stdio npm run bench -- --only gateway`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolRequestSchema, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from '@modelcontextprotocol/client';
import { stringify } from 'yaml';
import { percentile } from './measure.js';

export interface LatencyUs {
  readonly p50: number;
  readonly p99: number;
  readonly n: number;
}

export interface GatewaySide {
  readonly direct: LatencyUs;
  readonly gateway: LatencyUs;
  readonly gatewayNoAudit: LatencyUs;
  /** Through a bare stdio relay process (no MCP: lines in, parsed, lines out): the floor of the gateway's two pipe hops here. */
  readonly relay: LatencyUs;
}

export interface GatewayResult {
  readonly toolsCall: GatewaySide;
  readonly resourcesRead: GatewaySide;
  readonly toolsList: GatewaySide;
  /** `tools/call` over Streamable HTTP: a 2025-11-25 session and a 2026-07-28 (stateless) client; absent with `TOOLGATE_BENCH_GATEWAY=stdio`. */
  readonly http?: { readonly legacy: HttpSide; readonly modern: HttpSide };
  /** µs per request, measured in this process on the real messages. */
  readonly parseUs: number;
  readonly decideUs: number;
  readonly validateUs: number;
  readonly auditUs: number;
  readonly pinUs: number;
  readonly pinCachedUs: number;
  /** p50 of one line's round trip through an echoing child process (µs). */
  readonly pipeUs: number;
  /**
   * CPU µs per tools/call of the gateway process (with and without --audit), of the upstream called directly,
   * and of the bare stdio relay process (the floor of the gateway's own CPU: two lines in, two out, each
   * parsed; absent in results from before it was measured); null without /proc.
   */
  readonly cpu: {
    readonly gateway: number | null;
    readonly gatewayNoAudit: number | null;
    readonly upstream: number | null;
    readonly relay?: number | null;
  };
}

/** One era over Streamable HTTP: the upstream directly, through the gateway, through it with JWT verification. */
export interface HttpSide {
  readonly direct: LatencyUs;
  readonly gateway: LatencyUs;
  readonly gatewayJwt: LatencyUs;
  /** Through a bare HTTP relay process (no MCP: bytes in, bytes out, keep-alive): the floor of any HTTP hop here. */
  readonly relay: LatencyUs;
  /**
   * CPU µs per tools/call of the gateway process (no auth), of the upstream called directly, and of the bare
   * relay process (the floor of any HTTP hop's CPU: one request in, one out, both keep-alive); null without /proc.
   */
  readonly cpu: { readonly gateway: number | null; readonly upstream: number | null; readonly relay: number | null };
}

const ROOT = process.env['TOOLGATE_BENCH_ROOT'] ?? process.cwd();

function summary(samples: number[]): LatencyUs {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), n: sorted.length };
}

/** The process id behind each stdio client this bench spawned. */
const pids = new WeakMap<Client, number>();

async function connect(command: string, args: string[]): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  const transport = new StdioClientTransport({ command, args, stderr: 'ignore' });
  await client.connect(transport);
  if (transport.pid !== null) pids.set(client, transport.pid);
  return client;
}

/** CPU time (user + system) of a process so far, µs, from /proc (Linux; 10 ms ticks); null elsewhere. */
function cpuOf(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / 100;
  } catch {
    return null;
  }
}

/**
 * The CPU µs per request of each side's process (null where /proc is missing), read in `rounds` alternating rounds
 * of `perRound` sequential requests a side: one long read a side after the other put whatever else the machine
 * did in that stretch on one side only (2026-12-06: --audit 200 µs against 145 without in one run; alternated the
 * two are 7–17 µs apart, ~25–42k instructions and one write).
 */
async function cpuPerCall(
  sides: readonly (readonly [pid: number | undefined, run: () => Promise<unknown>])[],
  rounds: number,
  perRound: number,
): Promise<(number | null)[]> {
  const spent: (number | null)[] = sides.map(() => 0);
  for (let round = 0; round < rounds; round++)
    for (const [k, [pid, run]] of sides.entries()) {
      const before = cpuOf(pid);
      for (let i = 0; i < perRound; i++) await run();
      const after = cpuOf(pid);
      const sofar = spent[k]!;
      spent[k] = sofar === null || before === null || after === null ? null : sofar + (after - before);
    }
  return spent.map((total) => (total === null ? null : total / (rounds * perRound)));
}

export async function benchGateway(
  options: { readonly rounds?: number; readonly perRound?: number; readonly log?: (line: string) => void } = {},
): Promise<GatewayResult> {
  const log = options.log ?? (() => {});
  const rounds = options.rounds ?? 8;
  const perRound = options.perRound ?? 150;
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-bench-gw-'));
  const file = join(dir, 'notes.txt');
  writeFileSync(file, 'hello from the bench\n'.repeat(20));
  const fsMain = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
  const docsMain = resolve(ROOT, 'test/gateway/fixtures/docs-server.ts');
  const cliMain = resolve(ROOT, 'node_modules/.cache/toolgate-bench/src/cli/main.js');
  const node = process.execPath;
  const fsUpstream = { command: node, args: [fsMain, dir] };
  const docsUpstream = { command: node, args: ['--import', 'tsx', docsMain] };
  const policyFile = join(dir, 'policy.yaml');
  writeFileSync(
    policyFile,
    stringify({
      version: 1,
      gateway: { upstreams: { fs: fsUpstream, docs: docsUpstream } },
      rules: [
        { name: 'fs', namespace: 'fs', result: 'allow' },
        { name: 'docs', namespace: 'docs', result: 'allow' },
      ],
      resources: [{ name: 'all', result: 'allow' }],
    }),
  );
  const clients: { close(): Promise<void> }[] = [];
  const children: ChildProcess[] = [];
  const closers: (() => Promise<void>)[] = [];
  try {
    const fsDirect = await connect(fsUpstream.command, fsUpstream.args);
    const docsDirect = await connect(docsUpstream.command, docsUpstream.args);
    const gateway = await connect(node, [
      cliMain,
      'gateway',
      '--policy',
      policyFile,
      '--audit',
      join(dir, 'audit.jsonl'),
    ]);
    const bare = await connect(node, [cliMain, 'gateway', '--policy', policyFile]);
    const fsRelay = await connect(node, ['-e', STDIO_RELAY, '--', fsUpstream.command, ...fsUpstream.args]);
    const docsRelay = await connect(node, ['-e', STDIO_RELAY, '--', docsUpstream.command, ...docsUpstream.args]);
    clients.push(fsDirect, docsDirect, gateway, bare, fsRelay, docsRelay);
    const tool = (c: Client, name: string) => () => c.callTool({ name, arguments: { path: file } });
    const read = (c: Client) => () => c.readResource({ uri: 'docs://public/readme' });
    const list = (c: Client) => () => c.listTools();
    const shapes = {
      toolsCall: [
        tool(fsDirect, 'read_text_file'),
        tool(gateway, 'fs:read_text_file'),
        tool(bare, 'fs:read_text_file'),
        tool(fsRelay, 'read_text_file'),
      ],
      resourcesRead: [read(docsDirect), read(gateway), read(bare), read(docsRelay)],
      toolsList: [list(fsDirect), list(gateway), list(bare), list(fsRelay)],
    } as const;
    // Every side answers as the other does before anything is timed.
    const a = (await shapes.toolsCall[0]()) as { content: { text: string }[] };
    const b = (await shapes.toolsCall[1]()) as { content: { text: string }[]; isError?: boolean };
    if (b.isError || a.content[0]?.text !== b.content[0]?.text)
      throw new Error(`bench gateway: the gateway answered ${JSON.stringify(b)}, directly ${JSON.stringify(a)}`);
    const out: Record<string, GatewaySide> = {};
    for (const [shape, sides] of Object.entries(shapes)) {
      // tools/list of server-filesystem takes milliseconds directly (its schemas converted per request): fewer of it.
      // Each side is warmed until its JIT has settled (each process's p50 falls for ~2,000 calls: the
      // gateway's from ~1.2 ms to ~0.6 ms, the upstream's own from ~0.65 to ~0.3 ms, 2026-12-04): the figures
      // are those of processes that have been serving a while, not of their first calls.
      const few = shape === 'toolsList';
      const samples = await alternate(sides, rounds, few ? Math.ceil(perRound / 5) : perRound, few ? 300 : STDIO_WARM);
      out[shape] = {
        direct: summary(samples[0]!),
        gateway: summary(samples[1]!),
        gatewayNoAudit: summary(samples[2]!),
        relay: summary(samples[3]!),
      };
      const o = out[shape]!;
      log(
        `gateway ${shape}: direct p50 ${o.direct.p50.toFixed(0)} µs p99 ${o.direct.p99.toFixed(0)} µs; gateway --audit p50 ${o.gateway.p50.toFixed(0)} µs p99 ${o.gateway.p99.toFixed(0)} µs; without audit p50 ${o.gatewayNoAudit.p50.toFixed(0)} µs; bare stdio relay p50 ${o.relay.p50.toFixed(0)} µs p99 ${o.relay.p99.toFixed(0)} µs`,
      );
    }
    // cpu: what the gateway process itself spends per tools/call (and the upstream, called directly, for scale;
    // the bare relay's own, the floor of any process that reads, parses and writes both lines).
    const [gatewayCpu, gatewayNoAuditCpu, upstreamCpu, relayCpu] = await cpuPerCall(
      [
        [pids.get(gateway), shapes.toolsCall[1]],
        [pids.get(bare), shapes.toolsCall[2]],
        [pids.get(fsDirect), shapes.toolsCall[0]],
        [pids.get(fsRelay), shapes.toolsCall[3]],
      ],
      8,
      250,
    );
    const cpu = {
      gateway: gatewayCpu!,
      gatewayNoAudit: gatewayNoAuditCpu!,
      upstream: upstreamCpu!,
      relay: relayCpu!,
    };
    log(
      `gateway CPU per tools/call: --audit ${cpu.gateway?.toFixed(0)} µs, without audit ${cpu.gatewayNoAudit?.toFixed(0)} µs, the bare stdio relay ${cpu.relay?.toFixed(0)} µs (the upstream itself, called directly: ${cpu.upstream?.toFixed(0)} µs)`,
    );
    if (process.env['TOOLGATE_BENCH_GATEWAY'] === 'stdio') {
      const none = Number.NaN;
      return {
        toolsCall: out['toolsCall']!,
        resourcesRead: out['resourcesRead']!,
        toolsList: out['toolsList']!,
        parseUs: none,
        decideUs: none,
        validateUs: none,
        auditUs: none,
        pinUs: none,
        pinCachedUs: none,
        pipeUs: none,
        cpu,
      };
    }
    // Over Streamable HTTP, per era: the upstream directly, the gateway, the gateway verifying a JWT.
    const legacyUp = await spawnListening(
      node,
      ['--import', 'tsx', resolve(ROOT, 'test/mcp/fixtures/legacy-server.ts'), '--http'],
      children,
    );
    const legacyUpChild = children.at(-1)!;
    const modernUp = await spawnListening(
      node,
      ['--import', 'tsx', resolve(ROOT, 'test/mcp/fixtures/modern-server.ts'), '--http'],
      children,
    );
    const modernUpChild = children.at(-1)!;
    const legacyRelay = await spawnListening(node, ['-e', RELAY, legacyUp.href], children);
    const legacyRelayPid = children.at(-1)!.pid;
    const modernRelay = await spawnListening(node, ['-e', RELAY, modernUp.href], children);
    const modernRelayPid = children.at(-1)!.pid;
    const httpPolicy = join(dir, 'http-policy.yaml');
    writeFileSync(
      httpPolicy,
      stringify({
        version: 1,
        gateway: { upstreams: { leg: { url: legacyUp.href }, mod: { url: modernUp.href } }, pin: 'off' },
        rules: [{ name: 'all', result: 'allow' }],
        // The JWT's scope (a token's caller layer is the tools its scopes name).
        scopes: { bench: ['leg:echo', 'mod:echo'] },
      }),
    );
    const idp = await jwks();
    closers.push(idp.close);
    const plain = await spawnListening(
      node,
      [cliMain, 'gateway', '--policy', httpPolicy, '--http', '0', '--no-auth'],
      children,
    );
    const plainPid = children.at(-1)!.pid;
    const jwtGateway = await spawnListening(
      node,
      [cliMain, 'gateway', '--policy', httpPolicy, '--http', '0', '--jwks-url', idp.url, '--jwt-issuer', idp.issuer],
      children,
    );
    const bearer = { headers: { authorization: `Bearer ${await idp.sign(jwtGateway.href)}` } };
    const legacyAt = async (url: URL, requestInit?: RequestInit) => {
      const c = new Client({ name: 'bench-2025', version: '1.0.0' });
      await c.connect(
        new StreamableHTTPClientTransport(url, { fetch: benchFetch, ...(requestInit ? { requestInit } : {}) }),
      );
      clients.push(c);
      return c;
    };
    const modernAt = async (url: URL, requestInit?: RequestInit) => {
      const c = new ModernClient(
        { name: 'bench-2026', version: '1.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      await c.connect(new ModernHttp(url, { fetch: benchFetch, ...(requestInit ? { requestInit } : {}) }));
      clients.push(c);
      return c;
    };
    type Caller = { callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown> };
    const echo = (c: Caller, name: string) => () => c.callTool({ name, arguments: { text: 'bench' } });
    const eras = {
      legacy: [
        echo(await legacyAt(legacyUp), 'echo'),
        echo(await legacyAt(plain), 'leg:echo'),
        echo(await legacyAt(jwtGateway, bearer), 'leg:echo'),
        echo(await legacyAt(legacyRelay), 'echo'),
      ],
      modern: [
        echo(await modernAt(modernUp), 'echo'),
        echo(await modernAt(plain), 'mod:echo'),
        echo(await modernAt(jwtGateway, bearer), 'mod:echo'),
        echo(await modernAt(modernRelay), 'echo'),
      ],
    };
    const http: Record<string, HttpSide> = {};
    for (const [era, sides] of Object.entries(eras)) {
      for (const run of sides) {
        const got = (await run()) as { content?: { text?: string }[]; isError?: boolean };
        if (got.isError || got.content?.[0]?.text !== 'echo: bench')
          throw new Error(`bench gateway: ${era} over HTTP answered ${JSON.stringify(got)}`);
      }
      // Warmed as the stdio sides are, and for the same reason: the gateway's CPU per call over HTTP falls from
      // ~1,600 µs over its first 2,000 calls (TurboFan still compiling its path, on the main thread and two
      // more) to ~750 µs (2025-11-25) and ~900 µs (2026-07-28) from ~2,500 on, the bare relay's from ~1,100
      // to ~550 µs (2026-12-05, load 10–12): with 50 warm-up calls, the CPU below was read mid-compilation.
      const samples = await alternate(sides, rounds, perRound, HTTP_WARM);
      const upstreamPid = (era === 'legacy' ? legacyUpChild : modernUpChild).pid;
      const relayPid = era === 'legacy' ? legacyRelayPid : modernRelayPid;
      const cpu = await cpuPerCall(
        [
          [plainPid, sides[1]!],
          [upstreamPid, sides[0]!],
          [relayPid, sides[3]!],
        ],
        4,
        250,
      );
      const side: HttpSide = {
        direct: summary(samples[0]!),
        gateway: summary(samples[1]!),
        gatewayJwt: summary(samples[2]!),
        relay: summary(samples[3]!),
        cpu: { gateway: cpu[0]!, upstream: cpu[1]!, relay: cpu[2]! },
      };
      http[era] = side;
      log(
        `gateway tools/call over HTTP, ${era === 'legacy' ? '2025-11-25 session' : '2026-07-28'}: direct p50 ${side.direct.p50.toFixed(0)} µs p99 ${side.direct.p99.toFixed(0)} µs; gateway p50 ${side.gateway.p50.toFixed(0)} µs p99 ${side.gateway.p99.toFixed(0)} µs; with JWT p50 ${side.gatewayJwt.p50.toFixed(0)} µs; bare relay p50 ${side.relay.p50.toFixed(0)} µs; CPU per call: gateway ${side.cpu.gateway?.toFixed(0)} µs, the upstream itself ${side.cpu.upstream?.toFixed(0)} µs, the bare relay ${side.cpu.relay?.toFixed(0)} µs`,
      );
    }
    // parse: the request and the answer as JSON text through JSON.parse + JSON.stringify, both ways of the hop.
    const request = JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'fs:read_text_file', arguments: { path: file } },
    });
    const answer = JSON.stringify({ jsonrpc: '2.0', id: 7, result: a });
    const n = 20_000;
    let t0 = process.hrtime.bigint();
    let sink = 0;
    for (let i = 0; i < n; i++)
      sink += JSON.stringify(JSON.parse(request)).length + JSON.stringify(JSON.parse(answer)).length;
    const parseUs = Number(process.hrtime.bigint() - t0) / 1000 / n;
    // decide: the gateway's gate for this call, in process (the policy file's rules as the gateway loads them).
    const { loadPolicyFile } = await import('../src/policy-file/index.js');
    const { defineTool, ToolRegistry } = await import('../src/index.js');
    const loaded = await loadPolicyFile(policyFile);
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 'fs:read_text_file', parameters: { type: 'object' }, execute: () => '' }));
    registry.setPermissionPolicy(loaded.policy);
    t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++)
      sink += (await registry.decide({ name: 'fs:read_text_file', arguments: { path: file } })).effect.length;
    const decideUs = Number(process.hrtime.bigint() - t0) / 1000 / n;
    // validate: what the SDK's zod schemas cost for this request and its answer, on one side of one hop.
    const requestMessage = JSON.parse(request) as unknown;
    t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      sink += CallToolRequestSchema.parse(requestMessage).params.name.length;
      sink += CallToolResultSchema.parse(a).content.length;
    }
    const validateUs = Number(process.hrtime.bigint() - t0) / 1000 / n;
    // audit: the gateway's record of this call through the JSONL sink as the CLI makes it (frozen, one write).
    const { jsonlAuditSink, safeSink } = await import('../src/gateway/audit.js');
    const auditSink = safeSink(jsonlAuditSink(join(dir, 'pieces-audit.jsonl')));
    const decision = (await registry.decide({ name: 'fs:read_text_file', arguments: { path: file } })) as never;
    const auditN = 5_000;
    t0 = process.hrtime.bigint();
    for (let i = 0; i < auditN; i++)
      auditSink({
        type: 'tool',
        time: new Date().toISOString(),
        caller: null,
        session: null,
        upstream: 'fs',
        decision,
        status: 'ok',
        durationMs: 0.5,
      });
    const auditUs = Number(process.hrtime.bigint() - t0) / 1000 / auditN;
    // pin: the hash of the called tool's definition that every approval binds, uncached and cached.
    const { definitionPin, listedDefinitionPin, pinnedDefinition } = await import('../src/gateway/pins.js');
    const listed = (await fsDirect.listTools()).tools.find((t) => t.name === 'read_text_file')!;
    t0 = process.hrtime.bigint();
    for (let i = 0; i < auditN; i++) sink += definitionPin(pinnedDefinition(listed)).length;
    const pinUs = Number(process.hrtime.bigint() - t0) / 1000 / auditN;
    t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) sink += listedDefinitionPin(listed).length;
    const pinCachedUs = Number(process.hrtime.bigint() - t0) / 1000 / n;
    const pipeUs = await pipeRoundTrip(node, `${request}\n`, 2_000);
    if (sink === 0) throw new Error('unreachable');
    log(
      `gateway pieces: parse ${parseUs.toFixed(1)} µs, validate ${validateUs.toFixed(1)} µs, decide ${decideUs.toFixed(1)} µs, audit ${auditUs.toFixed(1)} µs, pin ${pinUs.toFixed(1)} µs (cached ${pinCachedUs.toFixed(2)} µs), pipe round trip p50 ${pipeUs.toFixed(0)} µs`,
    );
    return {
      toolsCall: out['toolsCall']!,
      resourcesRead: out['resourcesRead']!,
      toolsList: out['toolsList']!,
      http: { legacy: http['legacy']!, modern: http['modern']! },
      parseUs,
      decideUs,
      validateUs,
      auditUs,
      pinUs,
      pinCachedUs,
      pipeUs,
      cpu,
    };
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    for (const child of children) child.kill('SIGTERM');
    await Promise.allSettled(closers.map((close) => close()));
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A bare HTTP relay (`node -e RELAY <upstream URL>`): every request's body read and parsed as JSON, sent on a
 * keep-alive connection to the upstream with the same method and headers, the answer piped back as it
 * comes — what any HTTP hop costs, without MCP. Prints `listening on <url>` like the gateway.
 */
const RELAY = `
const { createServer, request, Agent } = require('node:http');
const up = new URL(process.argv[1]);
const agent = new Agent({ keepAlive: true });
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (body.length > 0) JSON.parse(body.toString('utf8'));
    const headers = { ...req.headers, host: up.host };
    const out = request({ agent, host: up.hostname, port: up.port, path: up.pathname, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    out.end(body);
  });
});
server.listen(0, '127.0.0.1', () => process.stderr.write('listening on http://127.0.0.1:' + server.address().port + '/mcp\\n'));
`;

/**
 * A bare stdio relay (`node -e STDIO_RELAY <command> <args…>`): spawns the upstream and relays lines both
 * ways, each line parsed as JSON on its way (as the HTTP relay parses its bodies) and written on as it came —
 * what the gateway's two extra pipe hops and one more process cost, without MCP.
 */
const STDIO_RELAY = `
const { spawn } = require('node:child_process');
const [command, ...args] = process.argv.slice(1);
const up = spawn(command, args, { stdio: ['pipe', 'pipe', 'ignore'] });
const relay = (from, to) => {
  let held = '';
  from.setEncoding('utf8');
  from.on('data', (chunk) => {
    held += chunk;
    for (let i = held.indexOf('\\n'); i !== -1; i = held.indexOf('\\n')) {
      const line = held.slice(0, i + 1);
      held = held.slice(i + 1);
      JSON.parse(line);
      to.write(line);
    }
  });
};
relay(process.stdin, up.stdin);
relay(up.stdout, process.stdout);
process.stdin.on('end', () => up.kill());
up.on('exit', () => process.exit(0));
`;

/**
 * The fetch of the bench's HTTP clients: the global fetch, except that a POST is not given the transport's
 * own long-lived signal. The SDKs' client transports pass that one signal to every request, and the global
 * fetch (undici) adds an abort listener to it per request that it drops only when the request is garbage
 * collected — tens of thousands of sequential calls printed ~2,250 MaxListenersExceededWarnings from this
 * (the bench's) process, none from the gateway's. Every call is awaited before its client closes, so nothing
 * is lost; the stream a client opens with GET keeps the signal (closing the client ends it).
 */
const benchFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
  fetch(input, init?.method === 'POST' && init.signal ? { ...init, signal: null } : init);

/** Warm-up calls per side of a stdio shape before it is timed (see benchGateway). */
const STDIO_WARM = 2_500;

/** Warm-up calls per side of an HTTP era before it is timed (see benchGateway): as many as over stdio. */
const HTTP_WARM = STDIO_WARM;

/** Samples of each side in alternating rounds (after `warm` warm-up calls each), µs per call. */
async function alternate(
  sides: readonly (() => Promise<unknown>)[],
  rounds: number,
  count: number,
  warm = 50,
): Promise<number[][]> {
  const samples: number[][] = sides.map(() => []);
  for (const run of sides) for (let i = 0; i < warm; i++) await run();
  for (let r = 0; r < rounds; r++)
    for (let s = 0; s < sides.length; s++)
      for (let i = 0; i < count; i++) {
        const t0 = process.hrtime.bigint();
        await sides[s]!();
        samples[s]!.push(Number(process.hrtime.bigint() - t0) / 1000);
      }
  return samples;
}

/** A child process that prints `listening on <url>` on stderr: its URL (the child is killed at the end). */
async function spawnListening(node: string, args: string[], children: ChildProcess[]): Promise<URL> {
  const child = spawn(node, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  return new Promise<URL>((resolveUrl, reject) => {
    let said = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      const m = /listening on (\S+)/.exec(said);
      if (m) resolveUrl(new URL(m[1]!));
    });
    child.once('exit', (code) => reject(new Error(`bench gateway: ${args.join(' ')} exited (${code}): ${said}`)));
  });
}

/** A JWKS on loopback and one RS256 token (an hour's exp) it verifies, as an identity provider would give. */
async function jwks(): Promise<{
  url: string;
  issuer: string;
  sign: (audience: string) => Promise<string>;
  close: () => Promise<void>;
}> {
  const { exportJWK, generateKeyPair, SignJWT } = await import('jose');
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' };
  const server = createServer((req, res) => {
    if (req.url === '/jwks')
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    else res.writeHead(404).end();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sign = (audience: string) =>
    new SignJWT({ sub: 'bench', aud: audience, scope: 'bench' })
      .setProtectedHeader({ alg: 'RS256', kid: 'bench' })
      .setIssuer(issuer)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
  return { url: `${issuer}/jwks`, issuer, sign, close: () => new Promise<void>((done) => server.close(() => done())) };
}

/** p50 of one line's round trip through a child that echoes its stdin to its stdout (no MCP), µs. */
async function pipeRoundTrip(node: string, line: string, n: number): Promise<number> {
  const child = spawn(node, ['-e', 'process.stdin.on("data", (d) => process.stdout.write(d))'], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  try {
    const samples: number[] = [];
    let waiting: (() => void) | undefined;
    let got = 0;
    child.stdout!.on('data', (chunk: Buffer) => {
      got += chunk.length;
      if (got >= line.length) {
        got -= line.length;
        waiting?.();
      }
    });
    for (let i = 0; i < n + 200; i++) {
      const t0 = process.hrtime.bigint();
      await new Promise<void>((done) => {
        waiting = done;
        child.stdin!.write(line);
      });
      if (i >= 200) samples.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
    return summary(samples).p50;
  } finally {
    child.kill('SIGTERM');
  }
}
