// The stdio gateway's audit line is held to the next tick, after the call's answer (c4bc46e): every way the
// process ends right after answers have gone out must still leave one line per call that ran upstream and per
// answer the client got. Each ending is tried with 30 calls in flight, the ending sent at the first answer.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { jsonLines, RECORDING, stdioUpstream, tempDir, writePolicy } from '../harness.js';
import { jsonLine } from '../gateway/fixtures/spawn.js';
import { onLines } from '../lines.js';

const MAIN = join(process.cwd(), 'src/cli/main.ts');

type Ending =
  'SIGTERM' | 'SIGINT' | 'stdin end' | 'SIGTERM twice' | 'SIGHUP then SIGTERM' | 'SIGTERM, slow calls running';

async function run(ending: Ending) {
  const dir = tempDir('atk-audit-exit');
  const record = join(dir, 'received.jsonl');
  const audit = join(dir, 'audit.jsonl');
  writeFileSync(record, '');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { rec: stdioUpstream(RECORDING, { RECORD: record, RECORD_IDS: '1', SLOW_MS: '400' }) },
      pin: 'off',
    },
    rules: [{ name: 'rest', result: 'allow' }],
  });
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'gateway', '--policy', policy, '--audit', audit], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  );
  const messages: Record<string, unknown>[] = [];
  let onMessage: (m: Record<string, unknown>) => void = () => {};
  onLines(child.stdout, (text) => {
    const m = JSON.parse(text) as Record<string, unknown>;
    messages.push(m);
    onMessage(m);
  });
  const answer = async (id: string) => {
    for (let waited = 0; waited < 60_000; waited += 20) {
      const m = messages.find((x) => x['id'] === id);
      if (m) return m;
      await sleep(20);
    }
    throw new Error(`no answer to ${id}:\n${stderr}`);
  };
  child.stdin.write(
    jsonLine({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'atk', version: '1' } },
    }),
  );
  await answer('init');
  child.stdin.write(jsonLine({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  for (let tries = 0; ; tries++) {
    child.stdin.write(jsonLine({ jsonrpc: '2.0', id: `list-${tries}`, method: 'tools/list' }));
    if (JSON.stringify(await answer(`list-${tries}`)).includes('rec:echo')) break;
    if (tries > 300) throw new Error(`never listed:\n${stderr}`);
    await sleep(100);
  }
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    if (ending === 'stdin end') child.stdin.end();
    else if (ending === 'SIGTERM twice') {
      child.kill('SIGTERM');
      // The second once the first is handled (its handler is `once`): any answer after it, then the second.
      onMessage = () => child.kill('SIGTERM');
    } else if (ending === 'SIGHUP then SIGTERM') {
      child.kill('SIGHUP');
      child.kill('SIGTERM');
    } else child.kill(ending === 'SIGTERM, slow calls running' ? 'SIGTERM' : ending);
  };
  onMessage = (m) => {
    if (typeof m['id'] === 'string' && m['id'].startsWith('c')) end();
  };
  let batch = '';
  const slow = ending === 'SIGTERM, slow calls running';
  for (let i = 0; i < (slow ? 5 : 0); i++)
    batch += jsonLine({
      jsonrpc: '2.0',
      id: `s${i}`,
      method: 'tools/call',
      params: { name: 'rec:slow', arguments: {} },
    });
  for (let i = 0; i < 30; i++)
    batch += jsonLine({
      jsonrpc: '2.0',
      id: `c${i}`,
      method: 'tools/call',
      params: { name: 'rec:echo', arguments: { text: `t${i}` } },
    });
  child.stdin.write(batch);
  const how = await Promise.race([exited, sleep(30_000).then(() => 'timeout')]);
  if (how === 'timeout') child.kill('SIGKILL');
  const answered = messages.filter((m) => typeof m['id'] === 'string' && m['id'].startsWith('c') && 'result' in m);
  // A call ran upstream: noted when it began (echo); a slow one when it was cancelled there, or else when it ended.
  const received = jsonLines(record);
  const count = (ok: (r: Record<string, unknown>) => boolean) => received.filter(ok).length;
  const slowRan = Math.max(
    count((r) => r['name'] === 'slow:cancelled'),
    count((r) => r['completed'] === true),
  );
  const ran = { length: count((r) => r['name'] === 'echo') + slowRan };
  const tools = jsonLines(audit).filter((r) => r['type'] === 'tool');
  // A line that says the upstream did not answer within its timeout (60 s) for a call stopped well before it.
  const untrue = tools.filter(
    (t) => String(t['reason'] ?? '').includes('did not answer within 60000 ms') && Number(t['durationMs']) < 60_000,
  );
  return { how, answered: answered.length, ran: ran.length, audited: tools.length, untrue: untrue.length, stderr };
}

describe('the held audit line on every way the stdio gateway ends', { timeout: 240_000 }, () => {
  const endings: Ending[] = [
    'SIGTERM',
    'SIGINT',
    'stdin end',
    'SIGTERM twice',
    'SIGHUP then SIGTERM',
    'SIGTERM, slow calls running',
  ];
  for (const ending of endings)
    it(`${ending} right after an answer: a line per call run upstream and per answer`, async () => {
      const r = await run(ending);
      expect(r.audited, JSON.stringify(r)).toBeGreaterThanOrEqual(r.ran);
      expect(r.audited, JSON.stringify(r)).toBeGreaterThanOrEqual(r.answered);
      // A call stopped by the shutdown is recorded as stopped (outcome unknown), not as a 60 s timeout.
      expect(r.untrue, JSON.stringify(r)).toBe(0);
    });
});
