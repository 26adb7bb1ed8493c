// Issue 25.2: the fast path's answers written from the upstream's own line (src/gateway/answer-lines.ts),
// through the real `toolgate gateway` process (audit on) and a real stdio upstream that writes the same answer
// in JSON.stringify's form and in forms a JSON reader takes but JSON.stringify does not write (whitespace,
// escapes, numbers, duplicate and integer keys, a lone surrogate; fixtures/answer-forms.ts). Each line the
// client receives must be, byte for byte, the line the fast path wrote before the change: JSON.stringify of
// `{ jsonrpc, id, result }` with `result` the upstream's result as JSON.parse reads it.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ANSWER_FORMS, WORDING_TEXT } from './fixtures/answer-forms.js';
import { emptyFile, stdioUpstream, tempDir, writePolicy } from '../harness.js';
import { onLines } from '../lines.js';

const MAIN = join(process.cwd(), 'src/cli/main.ts');
const WORDING = join(process.cwd(), 'test/gateway/fixtures/wording-server.ts');

const stops: (() => void)[] = [];
afterEach(() => {
  while (stops.length) stops.pop()!();
});

/** A raw JSON-lines client of `toolgate gateway` over stdio: every line it received, and a request helper. */
function rawGateway(policy: string, audit: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'gateway', '--policy', policy, '--audit', audit], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  stops.push(() => child.kill());
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const waiting = new Map<number, (line: string) => void>();
  onLines(child.stdout, (line) => {
    const id = (JSON.parse(line) as { id?: unknown }).id;
    if (typeof id === 'number') waiting.get(id)?.(line);
  });
  let next = 0;
  const request = (method: string, params: Record<string, unknown>): Promise<string> => {
    const id = ++next;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${method}:\n${stderr}`)), 30_000);
      waiting.set(id, (line) => {
        clearTimeout(timer);
        resolve(line);
      });
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  };
  return { request, notify: (method: string) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method })}\n`) };
}

/** The line the fast path wrote before: JSON.stringify of the answer, the upstream's result as JSON.parse reads it. */
function before(id: number, form: number, result: Record<string, unknown>): string {
  const upstreamLine = ANSWER_FORMS[form]!({ result, jsonrpc: '2.0', id: 'toolgate-raw:1' });
  return JSON.stringify({ jsonrpc: '2.0', id, result: (JSON.parse(upstreamLine) as { result: unknown }).result });
}

describe('answer-lines through the gateway', () => {
  it('answers tools/call and resources/read byte for byte as before, whatever form the upstream wrote', async () => {
    const dir = tempDir('answer-lines');
    const policy = writePolicy(dir, {
      version: 1,
      gateway: { upstreams: { w: stdioUpstream(WORDING) } },
      rules: [{ name: 'all', result: 'allow' }],
      resources: [{ name: 'all', result: 'allow' }],
    });
    const gw = rawGateway(policy, emptyFile(dir, 'audit.jsonl'));
    await gw.request('initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    });
    gw.notify('notifications/initialized');
    for (let tries = 0; ; tries++) {
      const listed = await gw.request('tools/list', {});
      if (listed.includes('"w:typed"')) break;
      if (tries > 100) throw new Error(listed);
      await new Promise((r) => setTimeout(r, 100));
    }
    const toolResult = {
      content: [{ type: 'text', text: WORDING_TEXT }],
      structuredContent: { content: WORDING_TEXT },
    };
    for (let round = 0; round < 2; round++)
      for (let form = 0; form < ANSWER_FORMS.length; form++) {
        for (const tool of ['w:word', 'w:typed']) {
          const line = await gw.request('tools/call', { name: tool, arguments: { form } });
          const id = (JSON.parse(line) as { id: number }).id;
          expect([tool, form, line]).toEqual([tool, form, before(id, form, toolResult)]);
        }
        const uri = `word://form/${form}`;
        const line = await gw.request('resources/read', { uri });
        const id = (JSON.parse(line) as { id: number }).id;
        const readResult = { contents: [{ uri, mimeType: 'text/plain', text: WORDING_TEXT }] };
        expect([uri, line]).toEqual([uri, before(id, form, readResult)]);
      }
  }, 120_000);
});
