// Attacks on the stdio fast path (src/gateway/fastpath.ts, upstream-raw.ts) through the real `toolgate gateway`
// process in front of the recording server: JSON lines no client library writes (duplicate keys, `__proto__`
// and `constructor` keys, odd `_meta`, arguments that are not an object, ids in the gateway's own
// `toolgate-raw:` namespace, cancellations, batches, a BOM, CRLF, invalid UTF-8, requests split across
// chunks or several in one, a request before `initialize`) and resource URIs against a denied
// `file:///R/secrets/**`. Each is sent with the fast path on and with it off: a refused refund or read never
// reaches the upstream on either, the upstream receives the same on both, the denial is audited and a
// limit's max holds.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { auditLines, RECORDING, ROOT, stdioUpstream, tempDir, writePolicy } from '../harness.js';
import { onLines } from '../lines.js';

const MAIN = join(ROOT, 'src/cli/main.ts');

function sandbox(label: string) {
  const dir = tempDir(`fastpath-attack-${label}`);
  const record = join(dir, 'received.jsonl');
  const audit = join(dir, 'audit.jsonl');
  writeFileSync(record, '');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { rec: stdioUpstream(RECORDING, { RECORD: record, RECORD_IDS: '1', SLOW_MS: '1500' }) },
      pin: 'off',
    },
    rules: [
      { name: 'big-refunds', tools: 'rec:refund', when: { amount: { gt: 100 } }, result: 'deny', reason: 'finance' },
      { name: 'rest', result: 'allow' },
    ],
    resources: [
      { name: 'no-secrets', uri: 'file:///R/secrets/**', result: 'deny', reason: 'secrets stay upstream' },
      { name: 'files', uri: 'file:///R/**', result: 'allow' },
    ],
    limits: [{ name: 'two-echoes', tools: ['rec:echo'], max: 2, window: '1h' }],
  });
  return { dir, record, audit, policy };
}

type Box = ReturnType<typeof sandbox>;

/** The gateway spoken to byte for byte; every line it writes is kept. */
class Wire {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly messages: Record<string, unknown>[] = [];
  stderr = '';

  constructor(box: Box, fast: boolean) {
    this.#child = spawn(
      process.execPath,
      ['--import', 'tsx', MAIN, 'gateway', '--policy', box.policy, '--audit', box.audit],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, ...(fast ? {} : { TOOLGATE_GATEWAY_FAST_PATH: 'off' }) },
      },
    );
    this.#child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
    onLines(this.#child.stdout, (line) => {
      try {
        this.messages.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        this.messages.push({ unparsed: line });
      }
    });
  }

  write(data: string | Buffer): void {
    this.#child.stdin.write(data);
  }

  /** The answer under `id`, or undefined after `ms`. */
  async answer(id: string | number, ms = 4000): Promise<Record<string, unknown> | undefined> {
    for (let waited = 0; waited < ms; waited += 50) {
      const found = this.messages.find((m) => m['id'] === id && ('result' in m || 'error' in m));
      if (found) return found;
      await sleep(50);
    }
    return undefined;
  }

  close(): void {
    this.#child.stdin.end();
    this.#child.kill();
  }
}

const line = (message: Record<string, unknown>): string => `${JSON.stringify(message)}\n`;
const INIT = (id: string | number) =>
  line({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'attacker', version: '1' } },
  });
const INITIALIZED = line({ jsonrpc: '2.0', method: 'notifications/initialized' });
const call = (id: string | number, name: string, args: unknown) =>
  line({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const read = (id: string | number, uri: string) =>
  line({ jsonrpc: '2.0', id, method: 'resources/read', params: { uri } });
const refund = (order: string, amount: number) => `"arguments":{"order":"${order}","amount":${amount}}`;

/** One attack: the bytes sent (each a write of its own) and the ids whose answers are awaited. */
interface Attack {
  readonly label: string;
  readonly writes: readonly (string | Buffer)[];
  readonly ids: readonly (string | number)[];
}

const ATTACKS: readonly Attack[] = [
  {
    label: 'name twice, the denied tool last',
    writes: [
      `{"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{"name":"rec:echo","name":"rec:refund",${refund('DUP-1', 500)}}}\n`,
    ],
    ids: ['a1'],
  },
  {
    label: 'name twice, the denied tool first',
    writes: [
      `{"jsonrpc":"2.0","id":"a2","method":"tools/call","params":{"name":"rec:refund","name":"rec:echo",${refund('DUP-2', 500)},"arguments":{"text":"dup"}}}\n`,
    ],
    ids: ['a2'],
  },
  {
    label: 'params twice',
    writes: [
      `{"jsonrpc":"2.0","id":"a3","method":"tools/call","params":{"name":"rec:refund",${refund('DUP-3a', 5)}},"params":{"name":"rec:refund",${refund('DUP-3', 500)}}}\n`,
    ],
    ids: ['a3'],
  },
  {
    label: 'method twice (tools/list then tools/call)',
    writes: [
      `{"jsonrpc":"2.0","id":"a4","method":"tools/list","method":"tools/call","params":{"name":"rec:refund",${refund('DUP-4', 500)}}}\n`,
    ],
    ids: ['a4'],
  },
  {
    label: '__proto__ on the message',
    writes: [
      `{"jsonrpc":"2.0","id":"b1","method":"tools/call","__proto__":{"params":{"name":"rec:echo"}},"params":{"name":"rec:refund",${refund('PROTO-1', 500)}}}\n`,
    ],
    ids: ['b1'],
  },
  {
    label: '__proto__ in params carrying the denied arguments',
    writes: [
      `{"jsonrpc":"2.0","id":"b2","method":"tools/call","params":{"name":"rec:refund",${refund('PROTO-2', 5)},"__proto__":{${refund('PROTO-2x', 500)}}}}\n`,
    ],
    ids: ['b2'],
  },
  {
    label: '__proto__ in arguments carrying the amount',
    writes: [
      `{"jsonrpc":"2.0","id":"b3","method":"tools/call","params":{"name":"rec:refund","arguments":{"order":"PROTO-3","__proto__":{"amount":500}}}}\n`,
    ],
    ids: ['b3'],
  },
  {
    label: '__proto__ in arguments beside an allowed amount',
    writes: [
      `{"jsonrpc":"2.0","id":"b4","method":"tools/call","params":{"name":"rec:refund","arguments":{"order":"PROTO-4","amount":5,"__proto__":{"amount":500}}}}\n`,
    ],
    ids: ['b4'],
  },
  {
    label: 'constructor/prototype keys in arguments',
    writes: [
      `{"jsonrpc":"2.0","id":"b5","method":"tools/call","params":{"name":"rec:refund","arguments":{"order":"CTOR-5","amount":500,"constructor":{"prototype":{"amount":1}}}}}\n`,
    ],
    ids: ['b5'],
  },
  {
    label: '__proto__ in _meta',
    writes: [
      `{"jsonrpc":"2.0","id":"b6","method":"tools/call","params":{"name":"rec:refund",${refund('META-6', 500)},"_meta":{"progressToken":1,"__proto__":{"x":1}}}}\n`,
    ],
    ids: ['b6'],
  },
  ...(
    [
      ['a JSON string', JSON.stringify(JSON.stringify({ order: 'ARGS-1', amount: 500 }))],
      ['an array', `[{"order":"ARGS-2","amount":500}]`],
      ['null', 'null'],
      ['a number', '500'],
    ] as const
  ).map(([what, args], i) => ({
    label: `arguments as ${what}`,
    writes: [
      `{"jsonrpc":"2.0","id":"c${i}","method":"tools/call","params":{"name":"rec:refund","arguments":${args}}}\n`,
    ],
    ids: [`c${i}`],
  })),
  ...(
    [
      ['_meta null', 'null'],
      ['_meta an array', '[1]'],
      ['_meta with a task', '{"progressToken":"p","io.modelcontextprotocol/related-task":{"taskId":"t"}}'],
      ['_meta with an unsafe progressToken', '{"progressToken":9007199254740993}'],
      ['_meta with an object progressToken', '{"progressToken":{"a":1}}'],
    ] as const
  ).map(([what, meta], i) => ({
    label: what,
    writes: [
      `{"jsonrpc":"2.0","id":"m${i}","method":"tools/call","params":{"name":"rec:refund",${refund(`META-${i}`, 500)},"_meta":${meta}}}\n`,
    ],
    ids: [`m${i}`],
  })),
  ...[
    'REC:REFUND',
    'rec:Refund',
    'rec:refund\u200b',
    'rec\uff1arefund',
    'rec:refund ',
    ' rec:refund',
    'rec:ref\u0578nd',
    'rec__refund',
    'refund',
    'rec:rec:refund',
  ].map((name, i) => ({
    label: `the tool named ${JSON.stringify(name)}`,
    writes: [call(`n${i}`, name, { order: `NAME-${i}`, amount: 500 })],
    ids: [`n${i}`],
  })),
  {
    label: 'invalid UTF-8 in the tool name',
    writes: [
      Buffer.concat([
        Buffer.from('{"jsonrpc":"2.0","id":"u1","method":"tools/call","params":{"name":"rec:ref'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(`und",${refund('UTF-1', 500)}}}\n`),
      ]),
    ],
    ids: ['u1'],
  },
  {
    label: 'a BOM before the line',
    writes: [`\ufeff${call('u2', 'rec:refund', { order: 'BOM-2', amount: 500 })}`],
    ids: ['u2'],
  },
  {
    label: 'CRLF',
    writes: [call('u3', 'rec:refund', { order: 'CRLF-3', amount: 500 }).replace('\n', '\r\n')],
    ids: ['u3'],
  },
  {
    label: 'a line split across writes, mid-key',
    writes: (() => {
      const text = call('s1', 'rec:refund', { order: 'SPLIT-1', amount: 500 });
      return [text.slice(0, 40), text.slice(40, 75), text.slice(75)];
    })(),
    ids: ['s1'],
  },
  {
    label: 'a line split in the middle of a UTF-8 character',
    writes: (() => {
      const bytes = Buffer.from(call('s2', 'rec:refund', { order: 'SPLIT-2-é', amount: 500 }));
      const at = bytes.indexOf(0xc3) + 1;
      return [bytes.subarray(0, at), bytes.subarray(at)];
    })(),
    ids: ['s2'],
  },
  {
    label: 'several requests in one write, the denied one between allowed ones',
    writes: [
      call('s3', 'rec:refund', { order: 'MULTI-ok-3', amount: 5 }) +
        call('s4', 'rec:refund', { order: 'MULTI-4', amount: 500 }) +
        read('s5', 'file:///R/secrets/key'),
    ],
    ids: ['s3', 's4', 's5'],
  },
  {
    label: 'a batch array',
    writes: [
      `[${call('t1', 'rec:refund', { order: 'BATCH-1', amount: 500 }).trim()},${read('t2', 'file:///R/secrets/key').trim()}]\n`,
    ],
    ids: ['t1', 't2'],
  },
  {
    label: "client ids in the gateway's raw namespace",
    writes: [
      call('toolgate-raw:1', 'rec:refund', { order: 'RAWID-1', amount: 500 }),
      call('toolgate-raw:2', 'rec:refund', { order: 'RAWID-ok-2', amount: 7 }),
    ],
    ids: ['toolgate-raw:1', 'toolgate-raw:2'],
  },
  {
    label: 'a denied call cancelled at once, and a cancel naming a raw id',
    writes: [
      call('x1', 'rec:refund', { order: 'CANCEL-1', amount: 500 }) +
        line({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: 'x1', reason: { toString: 1 } },
        }) +
        line({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'toolgate-raw:1' } }),
    ],
    ids: ['x1'],
  },
  ...[
    'file:///R//secrets/key',
    'file:///R/data/../secrets/key',
    'file:///R/data/%2e%2e/secrets/key',
    'file:///R/secrets/key/',
    'file:///R/secrets/key?x=1',
    'file:///R/secrets/key#frag',
    'file:///R/./secrets/key',
    'file:///R/secrets//key',
    'FILE:///R/secrets/key',
    'file://localhost/R/secrets/key',
    'file:///R/%73ecrets/key',
    'file:///R/secrets%2fkey',
    'file:///R\\secrets\\key',
    'file:///R/secrets/key\u0000',
  ].map((uri, i) => ({ label: `read ${JSON.stringify(uri)}`, writes: [read(`r${i}`, uri)], ids: [`r${i}`] })),
  {
    label: 'read with uri twice, the secret last',
    writes: [
      `{"jsonrpc":"2.0","id":"r90","method":"resources/read","params":{"uri":"file:///R/data/readme","uri":"file:///R/secrets/key"}}\n`,
    ],
    ids: ['r90'],
  },
  {
    label: 'read with __proto__ in params',
    writes: [
      `{"jsonrpc":"2.0","id":"r91","method":"resources/read","params":{"uri":"file:///R/data/readme","__proto__":{"uri":"file:///R/secrets/key"}}}\n`,
    ],
    ids: ['r91'],
  },
  {
    label: 'read with _meta carrying a uri',
    writes: [
      `{"jsonrpc":"2.0","id":"r92","method":"resources/read","params":{"uri":"file:///R/secrets/key","_meta":{"progressToken":"t"}}}\n`,
    ],
    ids: ['r92'],
  },
  {
    label: 'the limit: three echoes in one write (max 2)',
    writes: [
      call('l1', 'rec:echo', { text: 'one' }) +
        call('l2', 'rec:echo', { text: 'two' }) +
        call('l3', 'rec:echo', { text: 'three' }),
    ],
    ids: ['l1', 'l2', 'l3'],
  },
];

interface Run {
  readonly box: Box;
  readonly wire: Wire;
  readonly received: Record<string, unknown>[];
}

const received = (box: Box): Record<string, unknown>[] =>
  readFileSync(box.record, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

async function attack(fast: boolean): Promise<Run> {
  const box = sandbox(fast ? 'fast' : 'sdk');
  const wire = new Wire(box, fast);
  // Before `initialize`, and with `initialize` in the same write: the denied call is refused all the same.
  wire.write(call('pre1', 'rec:refund', { order: 'PRE-1', amount: 500 }));
  wire.write(INIT('init') + call('pre2', 'rec:refund', { order: 'PRE-2', amount: 500 }) + INITIALIZED);
  if (!(await wire.answer('init', 60_000))) throw new Error(`no initialize answer:\n${wire.stderr}`);
  await wire.answer('pre2');
  // Until the upstream is up (an allowed refund reaches it), so every refusal below is the gate's.
  for (let tries = 0; ; tries++) {
    wire.write(call(`up${tries}`, 'rec:refund', { order: `UP-ok-${tries}`, amount: 1 }));
    const answer = await wire.answer(`up${tries}`);
    if (answer && JSON.stringify(answer).includes('refunded')) break;
    if (tries > 60) throw new Error(`the upstream never came up:\n${wire.stderr}`);
    await sleep(250);
  }
  for (const a of ATTACKS) {
    for (const w of a.writes) {
      wire.write(w);
      await sleep(20);
    }
    for (const id of a.ids) await wire.answer(id, 2500);
  }
  // The slow call and any late answer settle.
  await sleep(2000);
  return { box, wire, received: received(box) };
}

const runs: Run[] = [];
afterAll(() => {
  for (const run of runs) run.wire.close();
});

describe('attacks on the stdio fast path through the real toolgate gateway', { timeout: 400_000 }, () => {
  it('no refused refund or read reaches the upstream, on either path, and both paths send it the same', async () => {
    const fast = await attack(true);
    runs.push(fast);
    const sdk = await attack(false);
    runs.push(sdk);
    for (const run of [fast, sdk]) {
      const label = run === fast ? 'fast' : 'sdk';
      const big = run.received.filter((r) => r['name'] === 'refund' && Number(r['amount']) > 100);
      expect(big, `${label}: denied refunds reached the upstream`).toEqual([]);
      const secrets = run.received.filter((r) => r['method'] === 'resources/read' && /secret/i.test(String(r['uri'])));
      expect(secrets, `${label}: denied reads reached the upstream`).toEqual([]);
      expect(JSON.stringify(run.wire.messages), label).not.toContain('TOP SECRET');
      // The limit's max of 2 held.
      expect(
        run.received.filter((r) => r['name'] === 'echo'),
        label,
      ).toHaveLength(2);
      // The allowed controls did reach it (the attacks were judged by a live gateway).
      expect(
        run.received.some((r) => r['order'] === 'MULTI-ok-3'),
        label,
      ).toBe(true);
    }
    // The fast run went raw; what reached the upstream is the same on both paths (ids and the wait apart).
    expect(fast.received.some((r) => String(r['id']).startsWith('toolgate-raw:'))).toBe(true);
    const what = (run: Run) =>
      run.received
        .filter((r) => !String(r['order']).startsWith('UP-ok-'))
        .map(({ id: _id, ...rest }) => JSON.stringify(rest))
        .sort();
    expect(what(fast)).toEqual(what(sdk));
    // The answers to the attacks are the same too (the refusals, the protocol errors, the results).
    // (x1 apart: the SDK refuses a cancellation whose reason is not a string and answers the call, the fast
    // path stops it unanswered — nothing is sent upstream either way.)
    const answers = (run: Run) =>
      ATTACKS.flatMap((a) => a.ids)
        .filter((id) => id !== 'x1')
        .filter((id, i, all) => all.indexOf(id) === i)
        .map((id) => {
          const m = run.wire.messages.find((x) => x['id'] === id && ('result' in x || 'error' in x));
          const text = JSON.stringify(m ?? null)
            .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z \(in \d+ s\)/g, '<time>')
            .replace(/[0-9a-f-]{36}/g, '<uuid>');
          return [id, JSON.parse(text) as unknown];
        });
    expect(answers(fast)).toEqual(answers(sdk));
  });

  it('a denied call on the fast path is audited as the denial it is', async () => {
    const fast = runs[0]!;
    type Audited = { type: string; decision?: { effect?: string; rule?: string | null } };
    const bigRefunds = (all: Audited[]) =>
      all.filter((r) => r.type === 'tool' && r.decision?.effect === 'deny' && r.decision.rule === 'big-refunds');
    const deniedRead = (all: Audited[]) => all.some((r) => r.type === 'resource' && r.decision?.effect === 'deny');
    // Each line is written just after its answer: waited for.
    const records = await auditLines<Audited>(fast.box.audit, (all) => bigRefunds(all).length >= 5 && deniedRead(all));
    const denied = bigRefunds(records);
    // Every attack that named rec:refund with amount 500 in the plain shape was decided and recorded.
    expect(denied.length).toBeGreaterThanOrEqual(5);
    expect(deniedRead(records)).toBe(true);
  });
});

describe('a cancellation under an id the client reused', { timeout: 200_000 }, () => {
  // A client sends an allowed `rec:slow` and, while it runs, another request under the same id, then cancels
  // that id. The SDK path cancels the LATER request (its Protocol keeps one controller per id, the latest);
  // the fast path cancelled the earlier one, the slow call, which the upstream then never completed: what
  // reaches the upstream depends on the switch.
  async function reused(fast: boolean): Promise<Record<string, unknown>[]> {
    const box = sandbox(fast ? 'reuse-fast' : 'reuse-sdk');
    const wire = new Wire(box, fast);
    try {
      wire.write(INIT('init') + INITIALIZED);
      if (!(await wire.answer('init', 60_000))) throw new Error(`no initialize answer:\n${wire.stderr}`);
      for (let tries = 0; ; tries++) {
        wire.write(call(`up${tries}`, 'rec:echo', { text: 'up' }));
        const answer = await wire.answer(`up${tries}`);
        if (answer && JSON.stringify(answer).includes('echo: up')) break;
        if (tries > 60) throw new Error(`the upstream never came up:\n${wire.stderr}`);
        await sleep(250);
      }
      wire.write(call('x', 'rec:slow', {}));
      await sleep(500);
      wire.write(call('x', 'rec:refund', { order: 'SAMEID', amount: 500 }));
      await sleep(300);
      wire.write(line({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'x' } }));
      await sleep(3000);
      return received(box)
        .filter((r) => r['name'] !== 'echo')
        .map(({ id: _id, ...rest }) => rest);
    } finally {
      wire.close();
    }
  }

  it('cancels the same request with the fast path on and off', async () => {
    const fast = await reused(true);
    const sdk = await reused(false);
    expect(sdk).toContainEqual({ method: 'tools/call', name: 'slow', completed: true });
    expect(fast).toEqual(sdk);
  });
});
