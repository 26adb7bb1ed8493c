// Attack 1 of issue 10 through the real `toolgate gateway` command over stdio: make the real
// @modelcontextprotocol/server-filesystem upstream read a file the policy refuses, with every shape the JSON of
// a tools/call can carry. The gate decides on the arguments as the gateway parsed them, and that same snapshot is
// what the upstream is sent, so none of these may read the refused file; each refusal is reported to the client
// and in the audit trail.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { auditLines } from '../harness.js';
import { onLines } from '../lines.js';

const ROOT = process.cwd();
const MAIN = join(ROOT, 'src/cli/main.ts');
const FS_SERVER = join(ROOT, 'node_modules/.bin/mcp-server-filesystem');
const SECRET = 'TOP-SECRET-7f3a9c';
const PUBLIC = 'public text 41b2';

/** A sandbox: files/ (the upstream's root) holding public.txt and secrets the policy refuses, one named in NFD on disk. */
function sandbox() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-stdio-attack-')));
  const files = join(dir, 'files');
  mkdirSync(join(files, 'vault'), { recursive: true });
  writeFileSync(join(files, 'public.txt'), PUBLIC);
  writeFileSync(join(files, 'secret.txt'), SECRET);
  writeFileSync(join(files, 'Secret.TXT'), SECRET);
  writeFileSync(join(files, 'vault', 'keys.txt'), SECRET);
  writeFileSync(join(files, 'cafe\u0301.txt'), SECRET); // "café.txt" in NFD, as macOS once wrote names
  const policy = join(dir, 'policy.yaml');
  const audit = join(dir, 'audit.jsonl');
  writeFileSync(
    policy,
    stringify({
      version: 1,
      gateway: { upstreams: { fs: { command: FS_SERVER, args: [files] } } },
      agents: { reader: { tools: ['fs:read_text_file'] } },
      rules: [
        {
          name: 'no-secrets',
          tools: 'fs:read_text_file',
          when: {
            path: {
              path: [join(files, 'secret.txt'), join(files, 'vault/**'), join(files, 'caf\u00e9.txt')],
              caseInsensitive: true,
            },
          },
          result: 'deny',
          reason: 'secrets stay upstream',
        },
        { name: 'reads', tools: 'fs:read_text_file', when: { path: { path: `${files}/**` } }, result: 'allow' },
      ],
    }),
  );
  return { files, policy, audit };
}

const box = sandbox();
const args = ['--import', 'tsx', MAIN, 'gateway', '--policy', box.policy, '--agent', 'reader', '--audit', box.audit];

/** The gateway spoken to line by line, so that a request can carry JSON no client library would write. */
class RawSession {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #waiting = new Map<number, (message: Record<string, unknown>) => void>();
  #next = 100;

  constructor() {
    this.#child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child.stderr.resume();
    onLines(this.#child.stdout, (line) => {
      const message = JSON.parse(line) as Record<string, unknown>;
      const id = message['id'];
      if (typeof id === 'number') this.#waiting.get(id)?.(message);
    });
  }

  async open(): Promise<void> {
    await this.request(
      '"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}',
    );
    this.#child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  }

  /** Sends `{"jsonrpc":"2.0","id":N,<body>}` as written (duplicate keys, escapes and all). */
  request(body: string): Promise<Record<string, unknown>> {
    const id = this.#next++;
    const answered = new Promise<Record<string, unknown>>((resolve) => this.#waiting.set(id, resolve));
    this.#child.stdin.write(`{"jsonrpc":"2.0","id":${id},${body}}\n`);
    return answered;
  }

  /** A tools/call whose `name` and `arguments` members are the raw JSON texts given. */
  call(nameJson: string, argumentsJson: string): Promise<Record<string, unknown>> {
    return this.request(`"method":"tools/call","params":{"name":${nameJson},"arguments":${argumentsJson}}`);
  }

  close(): void {
    this.#child.stdin.end();
    this.#child.kill();
  }
}

const q = (path: string) => JSON.stringify(path);
/** JSON text of a string with every character \u-escaped. */
const escaped = (text: string) =>
  `"${[...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`;

describe('attack 1 through `toolgate gateway` over stdio, in front of server-filesystem', { timeout: 180_000 }, () => {
  let raw: RawSession;
  beforeAll(async () => {
    raw = new RawSession();
    await raw.open();
    // The upstream may take a while to start on a loaded machine (the gateway reconnects): wait until the
    // allowed read works, so that every refusal below is the gate's and not an unavailable upstream.
    for (let tries = 0; ; tries++) {
      const response = await raw.call(q('fs:read_text_file'), `{"path":${q(join(box.files, 'public.txt'))}}`);
      if (JSON.stringify(response).includes(PUBLIC)) break;
      if (tries === 30) throw new Error(`the upstream never answered: ${JSON.stringify(response)}`);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }, 180_000);
  afterAll(() => raw.close());

  const secret = join(box.files, 'secret.txt');
  const pub = join(box.files, 'public.txt');
  const attempts: [string, string, string][] = [
    ['duplicate keys, the refused path last', q('fs:read_text_file'), `{"path":${q(pub)},"path":${q(secret)}}`],
    ['duplicate keys, the refused path first', q('fs:read_text_file'), `{"path":${q(secret)},"path":${q(pub)}}`],
    ['a __proto__ key holding the path', q('fs:read_text_file'), `{"__proto__":{"path":${q(secret)}}}`],
    [
      'a __proto__ key beside an allowed path',
      q('fs:read_text_file'),
      `{"path":${q(pub)},"__proto__":{"path":${q(secret)}}}`,
    ],
    [
      'a constructor key',
      q('fs:read_text_file'),
      `{"path":${q(pub)},"constructor":{"prototype":{"path":${q(secret)}}}}`,
    ],
    ['a toJSON key', q('fs:read_text_file'), `{"path":${q(pub)},"toJSON":{"path":${q(secret)}}}`],
    ['a toJSON key alone', q('fs:read_text_file'), `{"toJSON":{"path":${q(secret)}}}`],
    ['the path \\u-escaped', q('fs:read_text_file'), `{"path":${escaped(secret)}}`],
    ['the key \\u-escaped', q('fs:read_text_file'), `{${escaped('path')}:${q(secret)}}`],
    ['the path with ..', q('fs:read_text_file'), `{"path":${q(join(box.files, 'vault/../secret.txt'))}}`],
    ['the path with a dot segment', q('fs:read_text_file'), `{"path":${q(`${box.files}/./vault/keys.txt`)}}`],
    ['the path in another case', q('fs:read_text_file'), `{"path":${q(join(box.files, 'Secret.TXT'))}}`],
    ['the folder in another case', q('fs:read_text_file'), `{"path":${q(join(box.files, 'VAULT/keys.txt'))}}`],
    [
      'the name in NFD (the file on disk is NFD)',
      q('fs:read_text_file'),
      `{"path":${q(join(box.files, 'cafe\u0301.txt'))}}`,
    ],
    ['a doubled slash', q('fs:read_text_file'), `{"path":${q(`${box.files}//secret.txt`)}}`],
    ['a trailing slash', q('fs:read_text_file'), `{"path":${q(`${box.files}/vault/keys.txt/`)}}`],
    ['a nested object as the path', q('fs:read_text_file'), `{"path":{"path":${q(secret)},"toString":${q(secret)}}}`],
    ['an array as the path', q('fs:read_text_file'), `{"path":[${q(secret)}]}`],
    [
      'an extra nested object beside an allowed path',
      q('fs:read_text_file'),
      `{"path":${q(pub)},"options":{"path":${q(secret)}}}`,
    ],
    ['arguments as a JSON string', q('fs:read_text_file'), q(JSON.stringify({ path: secret }))],
    ['the tool name in another case', q('FS:Read_Text_File'), `{"path":${q(secret)}}`],
    ['the tool name with a zero-width space', q('fs:read_text_file\u200b'), `{"path":${q(secret)}}`],
    ['the tool name \\u-escaped', escaped('fs:read_text_file'), `{"path":${q(secret)}}`],
    ['an undeclared tool of the upstream', q('fs:read_file'), `{"path":${q(secret)}}`],
    ['an undeclared tool reading many files', q('fs:read_multiple_files'), `{"paths":[${q(pub)},${q(secret)}]}`],
  ];

  it.each(attempts)('%s: the refused file is not read', async (_label, name, argumentsJson) => {
    const response = await raw.call(name, argumentsJson);
    const body = JSON.stringify(response);
    expect(body).not.toContain(SECRET);
    const result = response['result'] as CallToolResult | undefined;
    // Refused by the gate (an error result naming why, or a protocol error for arguments that are not an
    // object), or — where the JSON says so — the public file read instead.
    expect(body).not.toContain('unavailable');
    if (result && !result.isError) expect(body).toContain(PUBLIC);
    else expect(body).toMatch(/Tool call refused|Tool call rejected|"code":-32603.*expected.*record/s);
  });

  it("the refusals are the gate's: the audit trail records a denial for the refused path", async () => {
    await raw.call(q('fs:read_text_file'), `{"path":${q(secret)}}`);
    type Audited = { type: string; decision?: { effect: string; rule: string | null } };
    const deniedSecret = (all: Audited[]) =>
      all.some((r) => r.type === 'tool' && r.decision?.effect === 'deny' && r.decision.rule === 'no-secrets');
    // The call's line is written just after its answer: waited for.
    const records = await auditLines<Audited>(box.audit, deniedSecret);
    expect(deniedSecret(records)).toBe(true);
    expect(JSON.stringify(records)).not.toContain(SECRET);
  });

  it('through the MCP SDK client: JSON-shaped variants of the path are refused and reported', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args, stderr: 'pipe' });
    const client = new Client({ name: 'attacker', version: '1.0.0' });
    await client.connect(transport);
    try {
      // The allowed read works (once the upstream is up), so the refusals below are the policy's.
      for (let tries = 0; ; tries++) {
        const ok = (await client.callTool({ name: 'fs:read_text_file', arguments: { path: pub } })) as CallToolResult;
        if (JSON.stringify(ok.content).includes(PUBLIC)) break;
        if (tries === 30) throw new Error(`the upstream never answered: ${JSON.stringify(ok)}`);
        await new Promise((r) => setTimeout(r, 2000));
      }
      const shapes: Record<string, unknown>[] = [
        { path: secret },
        JSON.parse(`{"path":${q(pub)},"__proto__":{"path":${q(secret)}}}`) as Record<string, unknown>,
        { path: pub, constructor: { path: secret } },
        { path: join(box.files, 'SECRET.txt') },
        { path: join(box.files, 'cafe\u0301.txt') },
        { path: join(box.files, 'vault', '..', 'vault', 'keys.txt') },
      ];
      for (const shape of shapes) {
        const result = (await client.callTool({ name: 'fs:read_text_file', arguments: shape })) as CallToolResult;
        const body = JSON.stringify(result);
        expect(body, JSON.stringify(shape)).not.toContain(SECRET);
        if (!result.isError) expect(body).toContain(PUBLIC);
        else expect(body).toMatch(/Tool call refused|Tool call rejected/);
      }
    } finally {
      await client.close();
    }
  });
});
