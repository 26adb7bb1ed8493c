/**
 * Tasks owned by their creator, through a real `toolgate gateway` process (JWTs from a JWKS issuer,
 * tenants from a claim) in front of a real 2026-07-28 upstream that creates tasks (fixtures/tasks-server.ts,
 * over stdio). A client that declares the tasks extension gets a task handle of the gateway's (never the
 * upstream's raw id) for a call the gate allowed — an ask's approval included, decided once at creation;
 * the creator reaches the task (tasks/get, tasks/update, tasks/cancel); another principal, the same subject
 * in another tenant, the raw upstream id, an edited handle are each refused (-32602 naming why, audited) and
 * never reach the upstream; tasks/result and tasks/list are unknown methods; a client without the
 * extension (2026-07-28 or 2025-11-25) is never given a task, and the upstream is not told it could make one.
 */
import { join } from 'node:path';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { jwksIssuer, spawnGateway } from '../gateway/fixtures/spawn.js';
import {
  cleanupsAfterEach,
  emptyFile,
  jsonLines,
  modernRequest,
  stdioUpstream,
  tempDir,
  writePolicy,
} from '../harness.js';
import { ROOT } from './fixtures/processes.js';

const TASKS_SERVER = join(ROOT, 'test/mcp/fixtures/tasks-server.ts');
const TASKS = 'io.modelcontextprotocol/tasks';

const cleanups = cleanupsAfterEach();

interface Answer {
  result?: Record<string, unknown> & {
    resultType?: string;
    taskId?: string;
    status?: string;
    requestState?: string;
    content?: { text: string }[];
  };
  error?: { code: number; message: string };
}

async function started(env: Record<string, string> = {}, shared?: Awaited<ReturnType<typeof jwksIssuer>>) {
  const dir = tempDir('tasks-owned');
  const record = emptyFile(dir, 'received.jsonl');
  const audit = join(dir, 'audit.jsonl');
  const writeWith = (extraRules: object[] = []) =>
    writePolicy(dir, {
      gateway: {
        upstreams: { jobs: { ...stdioUpstream(TASKS_SERVER, { RECORD: record, ...env }), connectTimeoutMs: 30_000 } },
        pin: 'off',
      },
      tenants: { acme: {}, globex: {} },
      scopes: { jobs: ['jobs:run', 'jobs:pay', 'jobs:crash'] },
      rules: [
        ...extraRules,
        { name: 'payments', tools: ['jobs:pay'], result: 'ask', reason: 'a person approves payments' },
        { name: 'rest', result: 'allow' },
      ],
    });
  const policy = writeWith();
  const idp = shared ?? (await jwksIssuer());
  if (!shared) cleanups.push(() => idp.close());
  const gateway = await spawnGateway(
    policy,
    ['--jwks-url', idp.jwksUrl, '--jwt-issuer', idp.issuer, '--tenant-claim', 'org_id', '--audit', audit],
    { TOOLGATE_APPROVAL_SECRET: 'the owner-set approval key of this gateway' },
  );
  cleanups.push(() => gateway.stop());
  const token = (sub: string, org: string, scope = 'jobs') =>
    idp.sign({ sub, org_id: org, aud: gateway.url.href, scope });
  /** Writes the policy with `extraRules` first and reloads it (SIGHUP), waiting for the gateway to say so. */
  const reload = async (extraRules: object[]) => {
    writeWith(extraRules);
    const before = gateway.stderr().length;
    process.kill(gateway.pid, 'SIGHUP');
    for (let i = 0; i < 100 && !/in force/.test(gateway.stderr().slice(before)); i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(gateway.stderr().slice(before)).toContain('in force');
  };

  /** One 2026-07-28 request as a client sends it (headers agreeing with the body). */
  const post = async (
    bearer: string,
    method: string,
    params: Record<string, unknown>,
    capabilities: Record<string, unknown> = { extensions: { [TASKS]: {} }, elicitation: { form: {} } },
  ): Promise<Answer> =>
    (await modernRequest<Answer>(gateway.url, method, params, { token: bearer, capabilities })).body;
  const alice = await token('alice', 'acme');
  for (let tries = 0; ; tries++) {
    const listed = await post(alice, 'tools/list', {});
    if (JSON.stringify(listed.result?.['tools'] ?? []).includes('jobs:run')) break;
    if (tries > 300) throw new Error(`the upstream did not come up:\n${gateway.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const received = () => jsonLines<{ method: string; params: Record<string, unknown>; declared: boolean }>(record);
  const audited = () => jsonLines(audit);
  return { gateway, token, post, alice, received, audited, idp, reload };
}

/** The protocol error of a refused tasks request (-32602), its message. */
function refusal(answer: Answer): string {
  expect(answer.error, JSON.stringify(answer)).toBeDefined();
  expect(answer.error!.code).toBe(-32602);
  return answer.error!.message;
}

describe('tasks owned by their creator, through a real gateway process', { timeout: 240_000 }, () => {
  it("the creator reaches its task by the gateway's handle; another principal, tenant, the raw id or an edited handle never reach the upstream", async () => {
    const { post, token, alice, received, audited } = await started();
    const bob = await token('bob', 'acme');
    const aliceElsewhere = await token('alice', 'globex');

    // server/discover: the extension only to a client that declared it.
    const discovered = await post(alice, 'server/discover', {});
    expect(discovered.result?.['capabilities']).toMatchObject({ extensions: { [TASKS]: {} } });
    const plainDiscover = await post(alice, 'server/discover', {}, {});
    expect(JSON.stringify(plainDiscover.result)).not.toContain(TASKS);

    // A task created for alice: a handle of the gateway's, not the upstream's id, only the extension's fields.
    const created = await post(alice, 'tools/call', { name: 'jobs:run', arguments: { job: 'build' } });
    expect(created.result, JSON.stringify(created)).toMatchObject({ resultType: 'task', status: 'working' });
    const handle = created.result!.taskId!;
    expect(handle).toMatch(/^tg-task\./);
    expect(handle).not.toBe('up-1');
    expect(created.result).not.toHaveProperty('upstreamSecret');
    expect(received().filter((r) => r.method === 'tools/call')).toEqual([
      { method: 'tools/call', params: { name: 'run', arguments: { job: 'build' } }, declared: true },
    ]);

    // The creator: get, update, cancel reach the upstream under its own id; the answer carries the handle.
    const got = await post(alice, 'tasks/get', { taskId: handle });
    expect(got.result, JSON.stringify(got)).toMatchObject({
      resultType: 'complete',
      taskId: handle,
      status: 'completed',
      result: { content: [{ type: 'text', text: 'job build done' }] },
    });
    const updated = await post(alice, 'tasks/update', { taskId: handle, inputResponses: {} });
    expect(updated.result, JSON.stringify(updated)).toMatchObject({
      resultType: 'complete',
    });
    expect((await post(alice, 'tasks/cancel', { taskId: handle })).result).toMatchObject({ resultType: 'complete' });
    const reached = () => received().filter((r) => r.method.startsWith('tasks/'));
    expect(reached().map((r) => [r.method, r.params['taskId']])).toEqual([
      ['tasks/get', 'up-1'],
      ['tasks/update', 'up-1'],
      ['tasks/cancel', 'up-1'],
    ]);

    // Anyone else: refused, naming why, before anything is sent.
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const params = { taskId: handle, ...(method === 'tasks/update' ? { inputResponses: {} } : {}) };
      expect(refusal(await post(bob, method, params))).toContain('another principal');
      expect(refusal(await post(aliceElsewhere, method, params))).toContain('another tenant');
      expect(refusal(await post(alice, method, { ...params, taskId: 'up-1' }))).toContain('not a task handle');
    }
    const edited = handle.slice(0, -1) + (handle.endsWith('0') ? '1' : '0');
    expect(refusal(await post(alice, 'tasks/get', { taskId: edited }))).toContain('edited');
    // The binding rewritten to name bob: the MAC no longer fits.
    const [, body, mac] = handle.split('.');
    const bound = JSON.parse(Buffer.from(body!, 'base64url').toString()) as unknown[];
    const forged = `tg-task.${Buffer.from(JSON.stringify([...bound.slice(0, 3), 'bob', ...bound.slice(4)])).toString('base64url')}.${mac}`;
    expect(refusal(await post(bob, 'tasks/get', { taskId: forged }))).toContain('edited');
    expect(reached()).toHaveLength(3);

    // Not methods of the extension: unknown, whoever asks.
    for (const method of ['tasks/result', 'tasks/list'])
      expect((await post(alice, method, { taskId: handle })).error?.code, method).toBe(-32601);

    // The audit has each refusal, none of them with an upstream.
    const refused = audited().filter((r) => r['type'] === 'task' && r['status'] === 'refused');
    expect(refused.length).toBe(11);
    expect(refused.every((r) => r['upstream'] === null)).toBe(true);
    const createdRecord = audited().find((r) => r['type'] === 'tool' && r['task'] !== undefined);
    expect(createdRecord).toMatchObject({ status: 'ok', task: { status: 'working' } });
  });

  it('a client without the extension is never given a task, and the upstream is not told it could make one', async () => {
    const { gateway, post, token, alice, received } = await started();
    const plain = await post(alice, 'tools/call', { name: 'jobs:run', arguments: { job: 'lint' } }, {});
    expect(plain.result, JSON.stringify(plain)).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'ran lint inline' }],
    });
    // Tasks methods are unknown to a client that did not declare the extension.
    expect((await post(alice, 'tasks/get', { taskId: 'up-1' }, {})).error?.code).toBe(-32601);

    const legacy = new ClientV1({ name: 'legacy', version: '1.0.0' });
    await legacy.connect(
      new HttpV1(gateway.url, {
        requestInit: { headers: { authorization: `Bearer ${await token('carol', 'acme')}` } },
      }),
    );
    cleanups.push(() => legacy.close());
    const old = await legacy.callTool({ name: 'jobs:run', arguments: { job: 'test' } });
    expect(old.content).toEqual([{ type: 'text', text: 'ran test inline' }]);
    expect(
      received()
        .filter((r) => r.method === 'tools/call')
        .map((r) => r.declared),
    ).toEqual([false, false]);
  });

  it("an ask's approval binds the task: input_required, then the approved retry creates it once, for the asker", async () => {
    const { post, token, alice, received, audited } = await started();
    const pay = { name: 'jobs:pay', arguments: { to: 'bob', amount: 5 } };
    const asked = await post(alice, 'tools/call', pay);
    expect(asked.result, JSON.stringify(asked)).toMatchObject({ resultType: 'input_required' });
    expect(received().filter((r) => r.method === 'tools/call')).toEqual([]);
    const approve = { 'toolgate.approval': { action: 'accept', content: { approve: true } } };
    const retry = { ...pay, requestState: asked.result!.requestState, inputResponses: approve };
    const created = await post(alice, 'tools/call', retry);
    expect(created.result, JSON.stringify(created)).toMatchObject({ resultType: 'task', status: 'working' });
    expect(received().filter((r) => r.method === 'tools/call')).toHaveLength(1);
    // The same approved state again: refused (used), nothing runs twice.
    expect(refusal(await post(alice, 'tools/call', retry))).toMatch(/used|replay|already/i);
    expect(received().filter((r) => r.method === 'tools/call')).toHaveLength(1);
    const handle = created.result!.taskId!;
    expect((await post(alice, 'tasks/get', { taskId: handle })).result).toMatchObject({
      status: 'completed',
      result: { content: [{ type: 'text', text: 'job pay bob 5 done' }] },
    });
    expect(refusal(await post(await token('bob', 'acme'), 'tasks/get', { taskId: handle }))).toContain(
      'another principal',
    );

    // A client that offers no way to ask (no elicitation declared): nobody was asked, and the refusal says so.
    const unasked = await post(alice, 'tools/call', pay, { extensions: { [TASKS]: {} } });
    const text = JSON.stringify(unasked.result);
    expect(unasked.result, text).toMatchObject({ isError: true });
    expect(text).toContain('nobody was asked: the client offers no way to ask (no form elicitation declared)');
    expect(text).not.toContain('approver denied');
    const record = audited()
      .filter((r) => r['type'] === 'tool')
      .at(-1)!;
    expect(JSON.stringify(record['decision'])).toContain('nobody was asked');
    expect(received().filter((r) => r.method === 'tools/call')).toHaveLength(1);
  });

  it('an upstream that answers a task to a call that did not take one: refused as an era violation, never passed on', async () => {
    const { gateway, post, token, alice, audited } = await started({ UNSOLICITED: '1' });
    const plain = await post(alice, 'tools/call', { name: 'jobs:run', arguments: { job: 'lint' } }, {});
    expect(JSON.stringify(plain)).not.toContain('"resultType":"task"');
    expect(plain.result, JSON.stringify(plain)).toMatchObject({ isError: true });
    expect(JSON.stringify(plain.result)).toContain('resultType \\"task\\"');
    const legacy = new ClientV1({ name: 'legacy', version: '1.0.0' });
    await legacy.connect(
      new HttpV1(gateway.url, {
        requestInit: { headers: { authorization: `Bearer ${await token('carol', 'acme')}` } },
      }),
    );
    cleanups.push(() => legacy.close());
    for (let tries = 0; !(await legacy.listTools()).tools.some((t) => t.name === 'jobs:run'); tries++) {
      if (tries > 300) throw new Error('the upstream did not come back');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const old = await legacy.callTool({ name: 'jobs:run', arguments: { job: 'test' } });
    expect(old.isError).toBe(true);
    expect(JSON.stringify(old)).not.toContain('taskId');
    expect(audited().some((r) => r['type'] === 'upstream' && JSON.stringify(r).includes('resultType \\"task\\"'))).toBe(
      true,
    );
  });

  it("a task's input requests go to its creator only as the request declared them; the answer goes back upstream", async () => {
    const { post, alice, received } = await started();
    const created = await post(alice, 'tools/call', { name: 'jobs:run', arguments: { job: 'ask' } });
    const handle = created.result!.taskId!;
    // Declared form elicitation: the task's elicitation is passed on.
    const waiting = await post(alice, 'tasks/get', { taskId: handle });
    expect(waiting.result, JSON.stringify(waiting)).toMatchObject({
      status: 'input_required',
      taskId: handle,
      inputRequests: { q: { method: 'elicitation/create', params: { message: 'Which colour?' } } },
    });
    // Not declared: -32021 naming elicitation, nothing passed on.
    const undeclared = await post(alice, 'tasks/get', { taskId: handle }, { extensions: { [TASKS]: {} } });
    expect(undeclared.error?.code, JSON.stringify(undeclared)).toBe(-32021);
    expect(undeclared.error?.message).toContain('elicitation');
    expect(JSON.stringify(undeclared)).not.toContain('Which colour?');
    // URL mode only declared: a form elicitation is not passed on either.
    const urlOnly = await post(
      alice,
      'tasks/get',
      { taskId: handle },
      { extensions: { [TASKS]: {} }, elicitation: { url: {} } },
    );
    expect(urlOnly.error?.code).toBe(-32021);
    // The answer reaches the upstream under its own id; the task completes with it.
    const answer = { q: { action: 'accept', content: { colour: 'teal' } } };
    const updated = await post(alice, 'tasks/update', { taskId: handle, inputResponses: answer });
    expect(updated.result, JSON.stringify(updated)).toMatchObject({ resultType: 'complete' });
    const update = received().find((r) => r.method === 'tasks/update');
    expect(update?.params['taskId']).toBe('up-1');
    const done = await post(alice, 'tasks/get', { taskId: handle });
    expect(done.result).toMatchObject({
      status: 'completed',
      result: { content: [{ type: 'text', text: `job ask answered ${JSON.stringify(answer.q)}` }] },
    });
  });

  // An attack (issue 23): the upstream numbers its tasks per process, so after it restarted (the gateway
  // reconnects) alice's old handle named bob's new task up-1: it read bob's result and cancelled his task.
  it('a handle is good only on the upstream connection it was created on: after the upstream restarts it is refused, never sent upstream', async () => {
    const { post, token, alice, received, audited } = await started();
    const bob = await token('bob', 'acme');
    const mine = await post(alice, 'tools/call', { name: 'jobs:run', arguments: { job: 'alice-build' } });
    const handle = mine.result!.taskId!;
    expect(JSON.stringify((await post(alice, 'tasks/get', { taskId: handle })).result)).toContain('alice-build');
    // The upstream exits; the gateway reconnects to a new process that numbers its tasks from up-1 again.
    await post(alice, 'tools/call', { name: 'jobs:crash', arguments: {} }, {});
    let bobs: Answer | undefined;
    for (let tries = 0; ; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      bobs = await post(bob, 'tools/call', { name: 'jobs:run', arguments: { job: 'bob-payroll' } });
      if (bobs.result?.resultType === 'task') break;
      if (tries > 150) throw new Error(`the upstream did not come back: ${JSON.stringify(bobs)}`);
    }
    const calls = received().filter((r) => r.method === 'tools/call');
    expect(calls.at(-1)!.params['arguments']).toEqual({ job: 'bob-payroll' });
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const params = { taskId: handle, ...(method === 'tasks/update' ? { inputResponses: {} } : {}) };
      const answer = await post(alice, method, params);
      expect(JSON.stringify(answer)).not.toContain('bob-payroll');
      expect(refusal(answer)).toContain('created on an earlier connection to upstream "jobs"');
    }
    // Only alice's own read before the restart reached an upstream.
    expect(
      received()
        .filter((r) => r.method.startsWith('tasks/'))
        .map((r) => r.method),
    ).toEqual(['tasks/get']);
    // bob's own handle works on the new connection.
    expect(JSON.stringify((await post(bob, 'tasks/get', { taskId: bobs.result!.taskId! })).result)).toContain(
      'bob-payroll',
    );
    const refused = audited().filter((r) => r['type'] === 'task' && r['status'] === 'refused');
    expect(refused.map((r) => r['method'])).toEqual(['tasks/get', 'tasks/update', 'tasks/cancel']);
    expect(refused.every((r) => String(r['reason']).includes('earlier connection'))).toBe(true);
  });

  // The same attack across replicas sharing the owner's secret: each reaches its own upstream process.
  it('a handle is good only on the gateway process that issued it: another replica with the same secret refuses it', async () => {
    const one = await started();
    const two = await started({}, one.idp);
    const mine = await one.post(one.alice, 'tools/call', { name: 'jobs:run', arguments: { job: 'alice-on-one' } });
    const handle = mine.result!.taskId!;
    const bobs = await two.post(await two.token('bob', 'acme'), 'tools/call', {
      name: 'jobs:run',
      arguments: { job: 'bob-on-two' },
    });
    expect(bobs.result).toMatchObject({ resultType: 'task' });
    const polled = await two.post(two.alice, 'tasks/get', { taskId: handle });
    expect(JSON.stringify(polled)).not.toContain('bob-on-two');
    expect(refusal(polled)).toContain('issued by another gateway process');
    expect(two.received().filter((r) => r.method.startsWith('tasks/'))).toEqual([]);
    expect(JSON.stringify((await one.post(one.alice, 'tasks/get', { taskId: handle })).result)).toContain(
      'alice-on-one',
    );
  });

  it("a handle expires with the task's ttlMs (capped by the gateway's maximum)", async () => {
    const { post, alice, received } = await started({ TTL_MS: '400' });
    const mine = await post(alice, 'tools/call', { name: 'jobs:run', arguments: { job: 'short' } });
    const handle = mine.result!.taskId!;
    expect((await post(alice, 'tasks/get', { taskId: handle })).result).toMatchObject({ status: 'completed' });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(refusal(await post(alice, 'tasks/get', { taskId: handle }))).toContain('expired at');
    expect(received().filter((r) => r.method.startsWith('tasks/'))).toHaveLength(1);
  });

  // An attack (issue 23): a task was never decided again, so after a reload denied the tool (or the token
  // lost the scope) the creator still read its result and drove it upstream.
  it('a task is decided at creation and again on every read: a narrowed token or a reload that denies the tool stops it; cancelling stays allowed', async () => {
    const { post, token, alice, received, audited, reload } = await started();
    const first = (await post(alice, 'tools/call', { name: 'jobs:run', arguments: { job: 'first' } })).result!.taskId!;
    const second = (await post(alice, 'tools/call', { name: 'jobs:run', arguments: { job: 'second' } })).result!
      .taskId!;
    expect(JSON.stringify((await post(alice, 'tasks/get', { taskId: first })).result)).toContain('job first done');
    const sent = () =>
      received()
        .filter((r) => r.method.startsWith('tasks/'))
        .map((r) => [r.method, r.params['taskId']]);
    expect(sent()).toEqual([['tasks/get', 'up-1']]);

    // The same principal, its token narrowed to no scope of the tool: refused (the caller layer), cancelled.
    const narrowed = await token('alice', 'acme', 'other');
    const read = await post(narrowed, 'tasks/get', { taskId: first });
    expect(JSON.stringify(read)).not.toContain('job first done');
    expect(refusal(read)).toContain('is refused now');
    expect(sent()).toEqual([
      ['tasks/get', 'up-1'],
      ['tasks/cancel', 'up-1'],
    ]);

    // A reload denies the tool: the creator's read and update are refused naming the rule, the task cancelled.
    await reload([{ name: 'no-run', tools: ['jobs:run'], result: 'deny', reason: 'stopped by the owner' }]);
    const after = await post(alice, 'tasks/get', { taskId: second });
    expect(JSON.stringify(after)).not.toContain('job second done');
    expect(refusal(after)).toContain('(rule "no-run"): stopped by the owner');
    expect(refusal(await post(alice, 'tasks/update', { taskId: second, inputResponses: {} }))).toContain(
      'rule "no-run"',
    );
    // Cancelling by the owner stays allowed (what an emergency deny wants).
    expect((await post(alice, 'tasks/cancel', { taskId: second })).result).toMatchObject({ resultType: 'complete' });
    expect(sent()).toEqual([
      ['tasks/get', 'up-1'],
      ['tasks/cancel', 'up-1'],
      ['tasks/cancel', 'up-2'],
      ['tasks/cancel', 'up-2'],
      ['tasks/cancel', 'up-2'],
    ]);
    const refused = audited().filter((r) => r['type'] === 'task' && r['status'] === 'refused');
    expect(refused.map((r) => r['method'])).toEqual(['tasks/get', 'tasks/get', 'tasks/update']);
    expect(refused.slice(1).every((r) => String(r['reason']).includes('rule "no-run"'))).toBe(true);
  });
});
