/**
 * One worker process of the multi-worker suite (run with `node --import tsx`). It opens the stores named in
 * its argument, does one job, prints one JSON line and exits. The tool it runs appends a line to a shared file
 * for every real execution, so the test counts executions across processes.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { AgentRunner, defineTool, PermissionPolicy, PermissionResult, ToolRegistry } from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import type { ApprovalDecision, RunResult, RunState } from '../../src/index.js';
import { createInbox, jwtApprover } from '../../src/inbox/index.js';
import { INBOX_SECRET, JWT_SECRET } from '../inbox/fixture.js';
import { Limiter } from '../../src/limits/limiter.js';
import type {
  ApprovalStore,
  CounterStore,
  Ledger,
  NonceStore,
  RememberStore,
  TallyStore,
} from '../../src/stores/types.js';

export interface WorkerJob {
  /**
   * pause: run until the approval, print { state, decision }. resume: resume the hand-off, print the result.
   * track: run until the approval and track it through an inbox on the shared store, print its ids, exit.
   * inbox: an inbox on the shared store that adopts the stored runner approvals; print { url }, then the
   * adopted run's result once it is answered and resumed. limit: charge a limiter.
   */
  readonly mode: 'pause' | 'resume' | 'track' | 'inbox' | 'limit';
  readonly backend: 'sqlite' | 'postgres' | 'redis';
  readonly sqliteFile?: string;
  readonly pgUrl?: string;
  readonly schema?: string;
  readonly redisUrl?: string;
  readonly prefix?: string;
  /** resume: the file holding { state, decision } from a pause. */
  readonly handoff?: string;
  /** The file every real execution appends to. */
  readonly executions?: string;
  /** resume: die with SIGKILL inside the tool, before or after its effect. */
  readonly crash?: 'before-effect' | 'after-effect';
  /** limit: calls to make, and the limit. */
  readonly calls?: number;
  readonly limit?: number;
  readonly leaseMs?: number;
  /** resume: the tool takes this long (other resumers meanwhile find its call held by this worker). */
  readonly slowMs?: number;
}

export const SECRET = 'multi-worker-test-secret-0123456789';

interface Opened {
  readonly approvals: ApprovalStore;
  readonly remembered: RememberStore;
  readonly nonces: NonceStore;
  readonly ledger: Ledger;
  readonly tallies: TallyStore;
  readonly counters: CounterStore | null;
  close(): Promise<void>;
}

async function open(job: WorkerJob): Promise<Opened> {
  if (job.backend === 'sqlite') {
    const { SqliteStores } = await import('../../src/stores/sqlite.js');
    const s = new SqliteStores({ filename: job.sqliteFile! });
    return { ...pick(s), counters: s.counters, close: async () => s.close() };
  }
  const { PostgresStores } = await import('../../src/stores/postgres.js');
  const pg = new PostgresStores({ connectionString: job.pgUrl!, schema: job.schema! });
  if (job.backend === 'postgres') return { ...pick(pg), counters: pg.counters, close: () => pg.close() };
  // redis: counters and nonces in Redis, remembered answers and the ledger in PostgreSQL.
  const { RedisStores } = await import('../../src/stores/redis.js');
  const redis = new RedisStores({ url: job.redisUrl!, prefix: job.prefix! });
  return {
    approvals: pg.approvals,
    remembered: pg.remembered,
    nonces: redis.nonces,
    ledger: pg.ledger,
    tallies: pg.tallies,
    counters: redis.counters,
    close: async () => {
      await pg.close();
      await redis.close();
    },
  };
}

function pick(s: {
  approvals: ApprovalStore;
  remembered: RememberStore;
  nonces: NonceStore;
  ledger: Ledger;
  tallies: TallyStore;
}) {
  return { approvals: s.approvals, remembered: s.remembered, nonces: s.nonces, ledger: s.ledger, tallies: s.tallies };
}

function registry(job: WorkerJob): ToolRegistry {
  const r = new ToolRegistry({ handlerTimeoutMs: 5000 });
  r.register(
    defineTool({
      name: 'refund',
      description: 'Refund an order',
      parameters: z.object({ order: z.string(), amount: z.number() }),
      execute: async ({ order, amount }) => {
        if (job.slowMs !== undefined) await new Promise((resolve) => setTimeout(resolve, job.slowMs));
        if (job.crash === 'before-effect') process.kill(process.pid, 'SIGKILL');
        appendFileSync(job.executions!, `${process.pid} ${order} ${amount}\n`);
        if (job.crash === 'after-effect') process.kill(process.pid, 'SIGKILL');
        return `refunded ${amount} on ${order}`;
      },
    }),
  );
  r.setPermissionPolicy(
    new PermissionPolicy({
      version: 'v1',
      rules: [
        { name: 'ask_refunds', tools: ['refund'], result: PermissionResult.ASK, reason: 'refunds need a person' },
      ],
    }),
  );
  return r;
}

function runner(job: WorkerJob, stores: Opened): AgentRunner {
  return new AgentRunner({
    registry: registry(job),
    model: new ScriptedModel([
      { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
      (r) => ({ text: `done: ${(r.messages.at(-1) as { content?: string } | undefined)?.content ?? ''}` }),
    ]),
    stores,
    ...(job.leaseMs !== undefined ? { leaseMs: job.leaseMs } : {}),
    secret: SECRET,
    handler: () => 'pending',
  });
}

/** The inbox a person answers in: signed in by the inbox tests' JWT bearer tokens, over the shared store. */
function anInbox(stores: Opened) {
  return createInbox({
    secret: INBOX_SECRET,
    authenticate: jwtApprover({ secret: JWT_SECRET }),
    store: stores.approvals,
    sweepIntervalMs: 0,
  });
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2]!) as WorkerJob;
  const stores = await open(job);
  try {
    if (job.mode === 'pause') {
      const r = runner(job, stores);
      const result = await r.run({ name: 'concierge', tools: ['refund'] }, 'refund A1', { tenant: 'acme' });
      if (result.status !== 'paused') throw new Error(`expected a pause, got ${result.status}`);
      const decision = r.answer(result.pending[0]!, 'allow');
      console.log(JSON.stringify({ state: result.state, decision }));
    } else if (job.mode === 'resume') {
      const { state, decision } = JSON.parse(readFileSync(job.handoff!, 'utf8')) as {
        state: RunState;
        decision: ApprovalDecision;
      };
      const result = await runner(job, stores).resume(state, [decision]);
      console.log(
        JSON.stringify({ status: result.status, output: result.status === 'completed' ? result.output : null }),
      );
    } else if (job.mode === 'track') {
      const inbox = anInbox(stores);
      const r = runner(job, stores);
      const result = await r.run({ name: 'concierge', tools: ['refund'] }, 'refund A1', { tenant: 'acme' });
      if (result.status !== 'paused') throw new Error(`expected a pause, got ${result.status}`);
      await inbox.runner(r).track(result);
      inbox.close();
      // The process ends here: whatever it kept in memory about the run is gone.
      console.log(JSON.stringify({ runId: result.runId, ids: result.pending.map((p) => p.id) }));
    } else if (job.mode === 'inbox') {
      const inbox = anInbox(stores);
      const runs = inbox.runner(runner(job, stores));
      const adopted: Promise<RunResult>[] = [];
      for (const record of await stores.approvals.list({ status: 'pending' })) {
        const tracked = await runs.adopt(record);
        if (tracked) adopted.push(tracked.done);
      }
      const server = await inbox.listen();
      console.log(JSON.stringify({ url: server.url, adopted: adopted.length }));
      const [result] = await Promise.all(adopted);
      // The run can end before the answer's HTTP response is written (the resume runs as the answer is
      // recorded); closing cuts every connection, so let that response go out first.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await server.close();
      inbox.close();
      console.log(
        JSON.stringify({ status: result?.status, output: result?.status === 'completed' ? result.output : null }),
      );
    } else {
      const limiter = new Limiter({
        counters: stores.counters!,
        prefix: job.prefix!,
        limits: [{ name: 'refunds', per: ['tenant'], tools: ['refund'], max: job.limit!, window: '1h' }],
      });
      let allowed = 0;
      for (let i = 0; i < job.calls!; i++) {
        const verdict = await limiter.charge({
          tenant: 'acme',
          caller: `c${process.pid}`,
          agent: 'a',
          runId: null,
          tool: 'refund',
          tags: [],
        });
        if (verdict.allowed) allowed++;
      }
      console.log(JSON.stringify({ allowed }));
    }
  } finally {
    await stores.close();
  }
}

await main();
