// The stdio gateway holds a call's audit line to the next tick, after its answer is written (c4bc46e). Attack: a client
// that never reads a large (4 MiB) answer, to keep the gateway inside a blocking stdout write with the line of a call
// the upstream already ran still held, then SIGKILL. Holds: the answer is queued on the pipe, not written blocking,
// so the next tick comes and the line is in the file before the kill.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { jsonLines, RECORDING, stdioUpstream, tempDir, writePolicy } from '../harness.js';
import { jsonLine } from '../gateway/fixtures/spawn.js';

const MAIN = join(process.cwd(), 'src/cli/main.ts');

describe('a large answer the client does not read', { timeout: 120_000 }, () => {
  it('the line of a call the upstream ran is in the file even if the gateway is then killed', async () => {
    const dir = tempDir('atk-audit-blocked');
    const record = join(dir, 'received.jsonl');
    const audit = join(dir, 'audit.jsonl');
    writeFileSync(record, '');
    const policy = writePolicy(dir, {
      gateway: { upstreams: { rec: stdioUpstream(RECORDING, { RECORD: record }) }, pin: 'off' },
      rules: [{ name: 'rest', result: 'allow' }],
    });
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'gateway', '--policy', policy, '--audit', audit], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stderr.resume();
    try {
      let out = '';
      const onData = (chunk: Buffer): void => void (out += chunk.toString('utf8'));
      child.stdout.on('data', onData);
      child.stdin.write(
        jsonLine({
          jsonrpc: '2.0',
          id: 'init',
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'atk', version: '1' } },
        }),
      );
      child.stdin.write(jsonLine({ jsonrpc: '2.0', method: 'notifications/initialized' }));
      for (let tries = 0; !out.includes('rec:echo'); tries++) {
        if (tries > 600) throw new Error('never listed');
        child.stdin.write(jsonLine({ jsonrpc: '2.0', id: `list-${tries}`, method: 'tools/list' }));
        await sleep(100);
      }
      // From now on the client reads nothing: the answer (4 MiB) fills the pipe and its write blocks.
      child.stdout.off('data', onData);
      child.stdout.pause();
      const text = 'x'.repeat(4 << 20);
      child.stdin.write(
        jsonLine({
          jsonrpc: '2.0',
          id: 'big',
          method: 'tools/call',
          params: { name: 'rec:echo', arguments: { text } },
        }),
      );
      for (let waited = 0; !readFileSync(record, 'utf8').includes('"echo"'); waited += 50) {
        if (waited > 60_000) throw new Error('the upstream never ran the call');
        await sleep(50);
      }
      await sleep(3000);
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
      const tools = jsonLines(audit).filter((r) => r['type'] === 'tool');
      expect(tools.map((r) => r['status'])).toEqual(['ok']);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
