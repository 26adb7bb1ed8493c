/**
 * The set-up the tests share: cleanups run after each test, temporary directories and policy files, the
 * lines an upstream fixture records, a tool result's text, a fixture as a stdio upstream, an in-process
 * gateway (`createGateway` on a policy file) with a client in memory or served over Streamable HTTP, and
 * hand-made 2026-07-28 requests. Spawned `toolgate gateway` processes are test/gateway/fixtures/spawn.ts.
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client as ModernClient,
  ProtocolError,
  StreamableHTTPClientTransport as ModernHttp,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, expect } from 'vitest';
import { stringify } from 'yaml';
import { serveGatewayHttp, type GatewayHttpServer } from '../src/gateway/http.js';
import {
  createGateway,
  gatewayConfigOf,
  type Gateway,
  type GatewayAuditRecord,
  type GatewayHttpOptions,
  type GatewayOptions,
} from '../src/gateway/index.js';
import { loadPolicyFile, type PolicySet } from '../src/policy-file/index.js';

export const ROOT = process.cwd();
/** The fixture upstreams of test/gateway/fixtures. */
export const DOCS = join(ROOT, 'test/gateway/fixtures/docs-server.ts');
export const RECORDING = join(ROOT, 'test/gateway/fixtures/recording-server.ts');

/** What runs after each test, last first. */
export type Cleanups = (() => unknown)[];

/**
 * The file's cleanups: after every test each runs, last first; one that fails does not stop the others,
 * unless `strict` (then it fails the test, and the ones after it do not run).
 */
export function cleanupsAfterEach(options: { readonly strict?: boolean } = {}): Cleanups {
  const cleanups: Cleanups = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      if (options.strict) await cleanup();
      else
        await Promise.resolve()
          .then(cleanup)
          .catch(() => undefined);
    }
  });
  return cleanups;
}

/**
 * The gateway's fast path on (`fast`) or off (TOOLGATE_GATEWAY_FAST_PATH=off) for what is made next; the
 * variable as it was is put back by the cleanups. It is read when an upstream connects and when a session or
 * the modern handler is made.
 */
export function fastPathFor(cleanups: Cleanups, fast: boolean): void {
  const previous = process.env['TOOLGATE_GATEWAY_FAST_PATH'];
  if (fast) delete process.env['TOOLGATE_GATEWAY_FAST_PATH'];
  else process.env['TOOLGATE_GATEWAY_FAST_PATH'] = 'off';
  cleanups.push(() => {
    if (previous === undefined) delete process.env['TOOLGATE_GATEWAY_FAST_PATH'];
    else process.env['TOOLGATE_GATEWAY_FAST_PATH'] = previous;
  });
}

/** A loopback HTTP server running `handle` (closed, its connections too, by the cleanups): its URL, path `path`. */
export async function loopbackServer(
  cleanups: Cleanups,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  path = '/',
): Promise<URL> {
  const server = createServer(handle);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  cleanups.push(
    () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  );
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`);
}

/**
 * Sends `req` on to `target` (its method and headers, `host` made the target's) and its answer back on `res`, as
 * a front or a man in the middle in front of a fixture does: the body is `body` when the caller read it already,
 * else `req` itself piped on. A failed hop closes `res`.
 */
export function forwardHttp(target: URL, req: IncomingMessage, res: ServerResponse, body?: string | Buffer): void {
  const out = request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  out.on('error', () => res.destroy());
  if (body === undefined) req.pipe(out);
  else out.end(body);
}

/** A new temporary directory, by its real path (the gateway resolves links). */
export const tempDir = (name: string): string => realpathSync(mkdtempSync(join(tmpdir(), `toolgate-${name}-`)));

/** An empty file in `dir` (what a fixture upstream appends to); its path. */
export function emptyFile(dir: string, name: string): string {
  const file = join(dir, name);
  writeFileSync(file, '');
  return file;
}

/** `data` as the policy file `name` in `dir` (`version: 1` unless it says otherwise); its path. */
export function writePolicy(dir: string, data: Record<string, unknown>, name = 'policy.yaml'): string {
  const file = join(dir, name);
  writeFileSync(file, stringify({ version: 1, ...data }));
  return file;
}

/** The non-empty lines of a file. */
export const lines = (file: string): string[] => readFileSync(file, 'utf8').split('\n').filter(Boolean);

/** A JSON-lines file, parsed. */
export const jsonLines = <T = Record<string, unknown>>(file: string): T[] =>
  lines(file).map((line) => JSON.parse(line) as T);

/**
 * The records of a gateway's JSONL audit file once `ok(records)` holds. `toolgate gateway --audit` writes a
 * call's line just after its answer, in the same turn of its event loop (gateway/audit.ts): a reader right
 * after the answer may come first, so this waits for the lines it needs (checked at once, then every 10 ms
 * for 10 s; a last line still being written is not read yet) instead of sleeping. Fails naming `what`.
 */
export async function auditLines<T = Record<string, unknown>>(
  file: string,
  ok: (records: T[]) => boolean = (records) => records.length > 0,
  what = `the audit lines awaited in ${file}`,
): Promise<T[]> {
  for (let tries = 0; ; tries++) {
    const written = existsSync(file) ? readFileSync(file, 'utf8') : '';
    const records = written
      .slice(0, written.lastIndexOf('\n') + 1)
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as T);
    if (ok(records)) return records;
    if (tries >= 1000) throw new Error(`${what}: the file holds ${JSON.stringify(records)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The text of a tool result's first content part. */
export const text = (result: unknown): string => (result as { content: { text: string }[] }).content[0]!.text;

/** A TypeScript fixture as a stdio upstream (run by tsx), with its environment. */
export const stdioUpstream = (file: string, env?: Record<string, string>) => ({
  command: process.execPath,
  args: ['--import', 'tsx', file],
  ...(env ? { env } : {}),
});

/**
 * An upstream served in this process, its namespace prefixed: each connection (the first, and each reconnect) gets a
 * new server from `make` over a linked in-memory pair, so a test can change what it lists and answers.
 */
export const inMemoryUpstream = (make: () => { connect(transport: InMemoryTransport): Promise<void> }) => ({
  prefix: true,
  transport: () => {
    const [a, b] = InMemoryTransport.createLinkedPair();
    void make().connect(b);
    return a;
  },
});

/** An in-process gateway on a policy file; what it audits is in `records`. */
export interface GatewayOn {
  readonly set: PolicySet;
  readonly gateway: Gateway;
  readonly records: GatewayAuditRecord[];
}

/**
 * `createGateway` on the policy file `policy`: its upstreams (unless `options` gives them), no pins, auditing
 * into `records`, and what `options` adds or replaces (a function of the loaded set); closed after the test.
 */
export async function gatewayOn(
  cleanups: Cleanups,
  policy: string,
  options: (set: PolicySet) => Partial<GatewayOptions> = () => ({}),
): Promise<GatewayOn> {
  const set = await loadPolicyFile(policy);
  const records: GatewayAuditRecord[] = [];
  const given = options(set);
  const gateway = await createGateway({
    policy: set,
    pins: null,
    audit: (r) => records.push(r),
    ...given,
    upstreams: given.upstreams ?? gatewayConfigOf(set).upstreams,
  });
  cleanups.push(() => gateway.close());
  return { set, gateway, records };
}

/** A gateway served over HTTP: its server and URL besides. */
export interface GatewayOverHttp extends GatewayOn {
  readonly http: GatewayHttpServer;
  readonly url: URL;
}

/**
 * {@link gatewayOn} with `gateway`, served by `serveGatewayHttp` on port 0 with `http` (no authentication
 * unless it says); closed after the test.
 */
export async function gatewayOverHttp(
  cleanups: Cleanups,
  policy: string,
  options: {
    readonly gateway?: (set: PolicySet) => Partial<GatewayOptions>;
    readonly http?: (set: PolicySet, records: GatewayAuditRecord[]) => Omit<GatewayHttpOptions, 'port'>;
  } = {},
): Promise<GatewayOverHttp> {
  const on = await gatewayOn(cleanups, policy, options.gateway);
  const http = await serveGatewayHttp(on.gateway, {
    port: 0,
    ...(options.http?.(on.set, on.records) ?? { authenticate: null }),
  });
  cleanups.push(() => http.close());
  return { ...on, http, url: http.url };
}

/** An MCP client (SDK v1) of a server the gateway creates, over an in-memory transport; closed after the test. */
export async function inMemoryClient(
  cleanups: Cleanups,
  gateway: Pick<Gateway, 'createServer'>,
  options: ConstructorParameters<typeof Client>[1] = {},
): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.createServer().connect(serverSide);
  const client = new Client({ name: 'test', version: '1.0.0' }, options);
  await client.connect(clientSide);
  cleanups.push(() => client.close());
  return client;
}

/** The data of every log line (`notifications/message`) `client` hears from now on, in order. */
export function heardLines(client: Client): string[] {
  const heard: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void heard.push(String(n.params.data)));
  return heard;
}

/**
 * An SDK v2 client pinned to 2026-07-28 over Streamable HTTP, with a bearer `token` when given; `setup`
 * runs before it connects (its request handlers). Closed after the test.
 */
export async function modernClient(
  cleanups: Cleanups,
  url: URL,
  options: NonNullable<ConstructorParameters<typeof ModernClient>[1]> & {
    readonly name?: string;
    readonly token?: string;
    readonly setup?: (client: ModernClient) => void;
  } = {},
): Promise<ModernClient> {
  const { name = 'modern-client', token, setup, ...clientOptions } = options;
  const client = new ModernClient(
    { name, version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, ...clientOptions },
  );
  setup?.(client);
  const headers = token === undefined ? undefined : { authorization: `Bearer ${token}` };
  await client.connect(new ModernHttp(url, headers ? { requestInit: { headers } } : {}));
  cleanups.push(() => client.close());
  return client;
}

/**
 * Waits until `client` lists the tool `name` (an upstream may take a while to start on a loaded machine),
 * or, with `present` false, until it no longer does.
 */
export async function untilListed(
  client: { listTools(): Promise<{ tools: { name: string }[] }> },
  name: string,
  log: () => string = () => '',
  present = true,
): Promise<void> {
  for (let tries = 0; (await client.listTools()).tools.some((t) => t.name === name) !== present; tries++) {
    if (tries > 300) throw new Error(`${name} ${present ? 'never listed' : 'still listed'}:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Waits until `ok()` holds (checked every 100 ms for 30 s); else fails naming `what`, with `log()`. */
export async function until(what: string, ok: () => boolean, log: () => string = () => ''): Promise<void> {
  for (let tries = 0; !ok(); tries++) {
    if (tries > 300) throw new Error(`${what}:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The `_meta` of a 2026-07-28 request: its version, the capabilities the client declares, its info. */
export const modernMeta = (capabilities: Record<string, unknown> = {}, version = '2026-07-28') => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientCapabilities': capabilities,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
});

/** The headers of a plain 2026-07-28 `tools/call` POST of `tool`, with `extra` (an authorization, say). */
export const modernCallHeaders = (tool: string, extra: Record<string, string> = {}): Record<string, string> => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': tool,
  ...extra,
});

/**
 * A 2026-07-28 `tools/call` of `tool` with `arguments` as the bytes of one HTTP/1.1 POST to `url` (head and body),
 * for a raw socket: pipelined requests, a client that leaves mid-call.
 */
export function rawModernCall(url: URL, tool: string, id: number, args: Record<string, unknown>): Buffer {
  const payload = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: tool, arguments: args, _meta: modernMeta() },
  });
  const head = [
    `POST ${url.pathname} HTTP/1.1`,
    `Host: ${url.host}`,
    ...Object.entries(modernCallHeaders(tool)).map(([k, v]) => `${k}: ${v}`),
    `Content-Length: ${Buffer.byteLength(payload)}`,
    '',
    '',
  ].join('\r\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(payload, 'utf8')]);
}

/** What an MCP endpoint answered one POST: the HTTP status, its challenge, the JSON-RPC answer. */
export interface Posted<T> {
  readonly status: number;
  readonly challenge: string | null;
  readonly body: T;
}

/**
 * One hand-made JSON-RPC POST to an MCP endpoint (`id` 1 unless `body` gives one), with `headers` as
 * given besides the content types (what no SDK client would send: mismatched headers, unknown versions).
 * The answer is read from the JSON body or the first event of an SSE stream.
 */
export async function postMcp<T = Record<string, unknown>>(
  url: URL,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Posted<T>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...body }),
  });
  const answer = await response.text();
  return {
    status: response.status,
    challenge: response.headers.get('www-authenticate'),
    body: JSON.parse(answer.startsWith('{') ? answer : /data: (.*)/.exec(answer)![1]!) as T,
  };
}

/** The headers of a 2026-07-28 request that agree with its body (`mcp-name` is the params' `name` or `taskId`). */
function modernHeaders(method: string, params: Record<string, unknown>, token?: string): Record<string, string> {
  const name = params['name'] ?? params['taskId'];
  return {
    ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
  };
}

/**
 * One 2026-07-28 request as a client sends it: the headers agree with the body (`mcp-name` is the params'
 * `name` or `taskId`), its `_meta` declares `capabilities`, a bearer `token` when given.
 */
export function modernRequest<T = Record<string, unknown>>(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  options: { readonly token?: string; readonly capabilities?: Record<string, unknown>; readonly id?: number } = {},
): Promise<Posted<T>> {
  return postMcp<T>(
    url,
    { id: options.id ?? 1, method, params: { ...params, _meta: modernMeta(options.capabilities) } },
    modernHeaders(method, params, options.token),
  );
}

/** One message of an answer's stream (or its lone JSON body). */
export interface StreamedMessage {
  readonly method?: string;
  readonly params?: { readonly data?: unknown };
  readonly result?: unknown;
  readonly error?: unknown;
}

/**
 * {@link modernRequest} read whole: every message of the answer's SSE stream (or its JSON body), the log lines'
 * data among them, and the answer. The request asks for log lines at `logLevel` (2026-07-28: per request).
 */
export async function modernExchange(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  options: {
    readonly token?: string;
    readonly capabilities?: Record<string, unknown>;
    readonly logLevel?: string;
  } = {},
): Promise<{ status: number; logs: string[]; answer: StreamedMessage | undefined }> {
  const meta = {
    ...modernMeta(options.capabilities),
    ...(options.logLevel === undefined ? {} : { 'io.modelcontextprotocol/logLevel': options.logLevel }),
  };
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...modernHeaders(method, params, options.token),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }),
  });
  const text = await response.text();
  const messages = (text.startsWith('{') ? [text] : [...text.matchAll(/^data: (.*)$/gm)].map((m) => m[1]!)).map(
    (line) => JSON.parse(line) as StreamedMessage,
  );
  return {
    status: response.status,
    logs: messages.filter((m) => m.method === 'notifications/message').map((m) => String(m.params?.data)),
    answer: messages.find((m) => m.result !== undefined || m.error !== undefined),
  };
}

/** The protocol error (-32602) a call of an SDK v2 client is refused with; a failure when it is not refused so. */
export async function refusedWith32602(call: Promise<unknown>): Promise<ProtocolError> {
  const error = await call.then(
    (r) => new Error(`expected a protocol error, got ${JSON.stringify(r)}`),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProtocolError);
  expect((error as ProtocolError).code).toBe(-32602);
  return error as ProtocolError;
}
