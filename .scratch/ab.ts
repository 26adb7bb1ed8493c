// A/B: the compiled gateway (bench build) with the fast path on and off, same upstream, alternating rounds.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { stringify } from 'yaml';
const ROOT = process.cwd();
const cli = resolve(ROOT, 'node_modules/.cache/toolgate-bench/src/cli/main.js');
const node = process.execPath;
const children: ChildProcess[] = [];
const prof = process.env['PROF'];
function listen(args: string[], env: Record<string, string> = {}): Promise<{ url: URL; pid: number }> {
  const child = spawn(node, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  children.push(child);
  return new Promise((ok, no) => {
    let said = '';
    child.stderr!.on('data', (c: Buffer) => { said += c; const m = /listening on (\S+)/.exec(said); if (m) ok({ url: new URL(m[1]!), pid: child.pid! }); });
    child.once('exit', (code) => no(new Error(`${args.join(' ')} exited ${code}: ${said}`)));
  });
}
const cpu = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10_000; };
const up = await listen(['--import', 'tsx', resolve(ROOT, 'test/mcp/fixtures/legacy-server.ts'), '--http']);
const dir = mkdtempSync(join(tmpdir(), 'ab-'));
const policy = join(dir, 'p.yaml');
writeFileSync(policy, stringify({ version: 1, gateway: { upstreams: { leg: { url: up.url.href } }, pin: 'off' }, rules: [{ name: 'all', result: 'allow' }] }));
const profArgs = (name: string) => (prof ? ['--cpu-prof', '--cpu-prof-dir', prof, '--cpu-prof-name', `${name}.cpuprofile`, '--cpu-prof-interval', '100'] : []);
const fast = await listen([...profArgs('fast'), cli, 'gateway', '--policy', policy, '--http', '0', '--no-auth']);
const off = await listen([...profArgs('off'), cli, 'gateway', '--policy', policy, '--http', '0', '--no-auth'], { TOOLGATE_GATEWAY_FAST_PATH: 'off' });
const RELAY = readFileSync(resolve(ROOT, 'bench/gateway.ts'), 'utf8').split('const RELAY = `')[1]!.split('`;')[0]!.replace(/\\n/g, '\\n');
const relay = await listen(['-e', RELAY, up.url.href]);
const client = async (url: URL) => { const c = new Client({ name: 'ab', version: '1' }); const t = new StreamableHTTPClientTransport(url); await c.connect(t); (t as any)._abortController = undefined; return c; };
const direct = await client(up.url), a = await client(fast.url), b = await client(off.url), rl = await client(relay.url);
for (const c of [a, b]) for (;;) { if ((await c.listTools()).tools.length) break; await new Promise((r) => setTimeout(r, 100)); }
const sides = [() => direct.callTool({ name: 'echo', arguments: { text: 'x' } }), () => a.callTool({ name: 'leg:echo', arguments: { text: 'x' } }), () => b.callTool({ name: 'leg:echo', arguments: { text: 'x' } }), () => rl.callTool({ name: 'echo', arguments: { text: 'x' } })];
const got = (await sides[1]!()) as any; if (got.content[0].text !== 'echo: x') throw new Error(JSON.stringify(got));
const samples: number[][] = [[], [], [], []];
const cpus = [0, 0, 0, 0];
for (const s of sides) for (let i = 0; i < 50; i++) await s();
const rounds = Number(process.env['ROUNDS'] ?? 8), per = Number(process.env['PER'] ?? 150);
const pids = [up.pid, fast.pid, off.pid, relay.pid];
for (let r = 0; r < rounds; r++) for (let s = 0; s < 4; s++) { const c0 = cpu(pids[s]!); for (let i = 0; i < per; i++) { const t0 = process.hrtime.bigint(); await sides[s]!(); samples[s]!.push(Number(process.hrtime.bigint() - t0) / 1000); } cpus[s]! += cpu(pids[s]!) - c0; }
const p50 = (x: number[]) => [...x].sort((m, n) => m - n)[Math.floor(x.length / 2)]!;
const n = rounds * per;
console.log(`load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
console.log(`p50 µs: direct ${p50(samples[0]!).toFixed(0)}, fast ${p50(samples[1]!).toFixed(0)} (+${(p50(samples[1]!) - p50(samples[0]!)).toFixed(0)}), sdk ${p50(samples[2]!).toFixed(0)} (+${(p50(samples[2]!) - p50(samples[0]!)).toFixed(0)}), relay ${p50(samples[3]!).toFixed(0)} (+${(p50(samples[3]!) - p50(samples[0]!)).toFixed(0)})`);
console.log(`cpu µs/call: upstream ${(cpus[0]! / n).toFixed(0)}, gateway fast ${(cpus[1]! / n).toFixed(0)}, gateway sdk ${(cpus[2]! / n).toFixed(0)}, relay ${(cpus[3]! / n).toFixed(0)}`);
for (const c of children) c.kill('SIGINT');
await new Promise((r) => setTimeout(r, 1500));
process.exit(0);
