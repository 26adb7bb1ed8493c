/**
 * The gateway over stdio against the same upstream called directly (issue 25.2), real processes: an SDK
 * client spawns either the upstream itself or `toolgate gateway --policy FILE --audit FILE` (the compiled
 * CLI of the bench build, plain node), which spawns the upstream. Upstreams: server-filesystem (a
 * devDependency) for `tools/call` (`read_text_file` of a small file) and `tools/list`; the gateway tests' docs
 * server (test/gateway/fixtures/docs-server.ts, under tsx) for `resources/read`. Requests go one at a time;
 * each side is timed in alternating rounds (direct, gateway, gateway without audit, …), so the load of the
 * machine falls on all of them alike; per-request percentiles over every request of a side.
 *
 * The gateway's own cost is then split by what the bench can measure: `audit` is the gateway with --audit
 * against the gateway without it; `parse` is JSON.parse + JSON.stringify of the request and the answer as
 * they cross it (timed here, on the real bytes); `decide` is the gateway's decision for the call (the same
 * policy in this process, `registry.decide` of the namespaced call); `relay` is the rest (the second hop
 * over stdio, the SDK's Client and Server on both sides of the gateway).
 *
 * The 2026-07-28 path (issue 23, added by the mcp helper): the same `tools/call` through one
 * `toolgate gateway --http 0 --no-auth` from an SDK v2 client pinned to 2026-07-28 (stateless: a fresh
 * server per request) and from an SDK v1 client in a 2025-11-25 session, in alternating rounds (`http`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
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
}

export interface GatewayResult {
  readonly toolsCall: GatewaySide;
  readonly resourcesRead: GatewaySide;
  readonly toolsList: GatewaySide;
  /** `tools/call` through the gateway over HTTP: a 2025-11-25 session and a 2026-07-28 (stateless) client. */
  readonly http: { readonly legacy: LatencyUs; readonly modern: LatencyUs };
  /** µs per request, measured in this process on the real messages. */
  readonly parseUs: number;
  readonly decideUs: number;
}

const ROOT = process.env['TOOLGATE_BENCH_ROOT'] ?? process.cwd();

function summary(samples: number[]): LatencyUs {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), n: sorted.length };
}

async function connect(command: string, args: string[]): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }));
  return client;
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
  let httpGateway: ChildProcess | undefined;
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
    clients.push(fsDirect, docsDirect, gateway, bare);
    const tool = (c: Client, name: string) => () => c.callTool({ name, arguments: { path: file } });
    const read = (c: Client) => () => c.readResource({ uri: 'docs://public/readme' });
    const list = (c: Client) => () => c.listTools();
    const shapes = {
      toolsCall: [
        tool(fsDirect, 'read_text_file'),
        tool(gateway, 'fs:read_text_file'),
        tool(bare, 'fs:read_text_file'),
      ],
      resourcesRead: [read(docsDirect), read(gateway), read(bare)],
      toolsList: [list(fsDirect), list(gateway), list(bare)],
    } as const;
    // Every side answers as the other does before anything is timed.
    const a = (await shapes.toolsCall[0]()) as { content: { text: string }[] };
    const b = (await shapes.toolsCall[1]()) as { content: { text: string }[]; isError?: boolean };
    if (b.isError || a.content[0]?.text !== b.content[0]?.text)
      throw new Error(`bench gateway: the gateway answered ${JSON.stringify(b)}, directly ${JSON.stringify(a)}`);
    const out: Record<string, GatewaySide> = {};
    for (const [shape, sides] of Object.entries(shapes)) {
      const samples: number[][] = [[], [], []];
      for (const run of sides) for (let i = 0; i < 50; i++) await run(); // warm-up
      // tools/list of server-filesystem takes milliseconds directly (its schemas converted per request): fewer of it.
      const count = shape === 'toolsList' ? Math.ceil(perRound / 5) : perRound;
      for (let r = 0; r < rounds; r++)
        for (let s = 0; s < sides.length; s++)
          for (let i = 0; i < count; i++) {
            const t0 = process.hrtime.bigint();
            await sides[s]!();
            samples[s]!.push(Number(process.hrtime.bigint() - t0) / 1000);
          }
      out[shape] = {
        direct: summary(samples[0]!),
        gateway: summary(samples[1]!),
        gatewayNoAudit: summary(samples[2]!),
      };
      const o = out[shape]!;
      log(
        `gateway ${shape}: direct p50 ${o.direct.p50.toFixed(0)} µs p99 ${o.direct.p99.toFixed(0)} µs; gateway --audit p50 ${o.gateway.p50.toFixed(0)} µs p99 ${o.gateway.p99.toFixed(0)} µs; without audit p50 ${o.gatewayNoAudit.p50.toFixed(0)} µs`,
      );
    }
    // The 2026-07-28 path: one HTTP gateway, a 2025-11-25 session and a 2026-07-28 client, alternating.
    httpGateway = spawn(node, [cliMain, 'gateway', '--policy', policyFile, '--http', '0', '--no-auth'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const url = await new Promise<URL>((resolveUrl, reject) => {
      let said = '';
      httpGateway!.stderr!.on('data', (chunk: Buffer) => {
        said += chunk.toString();
        const m = /listening on (\S+)/.exec(said);
        if (m) resolveUrl(new URL(m[1]!));
      });
      httpGateway!.once('exit', (code) =>
        reject(new Error(`bench gateway: the HTTP gateway exited (${code}): ${said}`)),
      );
    });
    const legacyHttp = new Client({ name: 'bench-2025', version: '1.0.0' });
    await legacyHttp.connect(new StreamableHTTPClientTransport(url));
    const modernHttp = new ModernClient(
      { name: 'bench-2026', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await modernHttp.connect(new ModernHttp(url));
    clients.push(legacyHttp, modernHttp);
    const httpSides = [
      () => legacyHttp.callTool({ name: 'fs:read_text_file', arguments: { path: file } }),
      () => modernHttp.callTool({ name: 'fs:read_text_file', arguments: { path: file } }),
    ];
    const m = (await httpSides[1]!()) as { content: { text: string }[]; isError?: boolean };
    if (m.isError || m.content[0]?.text !== a.content[0]?.text)
      throw new Error(`bench gateway: the 2026-07-28 client got ${JSON.stringify(m)}`);
    const httpSamples: number[][] = [[], []];
    for (const run of httpSides) for (let i = 0; i < 50; i++) await run();
    for (let r = 0; r < rounds; r++)
      for (let s = 0; s < httpSides.length; s++)
        for (let i = 0; i < perRound; i++) {
          const t0 = process.hrtime.bigint();
          await httpSides[s]!();
          httpSamples[s]!.push(Number(process.hrtime.bigint() - t0) / 1000);
        }
    const http = { legacy: summary(httpSamples[0]!), modern: summary(httpSamples[1]!) };
    log(
      `gateway tools/call over HTTP: 2025-11-25 session p50 ${http.legacy.p50.toFixed(0)} µs p99 ${http.legacy.p99.toFixed(0)} µs; 2026-07-28 p50 ${http.modern.p50.toFixed(0)} µs p99 ${http.modern.p99.toFixed(0)} µs`,
    );
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
    if (sink === 0) throw new Error('unreachable');
    log(`gateway pieces: parse ${parseUs.toFixed(1)} µs, decide ${decideUs.toFixed(1)} µs`);
    return {
      toolsCall: out['toolsCall']!,
      resourcesRead: out['resourcesRead']!,
      toolsList: out['toolsList']!,
      http,
      parseUs,
      decideUs,
    };
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    httpGateway?.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
