/**
 * `npm run demo -- --inbox`: the demo's refund over 100 pauses for a human, and the approval inbox shows
 * it. Open the printed sign-in link, approve or deny, and the run finishes here.
 *
 * Standalone: npx tsx examples/demo/inbox.ts
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { AgentRunner, type Agent, type RunResult } from '../../src/index.js';
import { createInbox } from '../../src/inbox/index.js';
import { script, shopRegistry } from './runner.js';

const concierge: Agent = { name: 'concierge', tools: ['search', 'quote', 'refund'] };

/** A running inbox demo: where to sign in, and the paused run's final result once someone answers. */
export interface InboxDemo {
  readonly url: string;
  /** A single-use sign-in link for the approver `supervisor`. */
  readonly signIn: string;
  readonly refunds: readonly string[];
  readonly done: Promise<RunResult>;
  close(): Promise<void>;
}

export async function inboxDemo(
  print: (line: string) => void,
  options: { readonly port?: number } = {},
): Promise<InboxDemo> {
  const refunds: string[] = [];
  const registry = shopRegistry(refunds);
  const runner = new AgentRunner({
    registry,
    model: script(),
    tenants: { acme: { tools: ['search', 'quote', 'refund'] } },
    secret: randomBytes(32),
    handler: () => 'pending',
  });
  const inbox = createInbox({ secret: randomBytes(32), approvers: { fourEyes: true } });
  const server = await inbox.listen({ port: options.port ?? 0 });
  const result = await runner.run(concierge, 'refund order A-1042', { tenant: 'acme', caller: { id: 'cy' } });
  const tracked = await inbox.runner(runner, { registry }).track(result);
  const signIn = inbox.link({ approver: 'supervisor', ttlMs: 3_600_000 });
  print('Approval inbox — a refund of 250 on A-1042 waits for a human (rule ask_refunds_over_100)');
  print(`  inbox:   ${server.url}/`);
  print(`  sign in: ${signIn}`);
  print('  (single-use link for the approver "supervisor"; ^C stops the demo)');
  const done = tracked.done.then((final) => {
    print(`  the run ${final.status}: ${final.status === 'completed' ? final.output : ''}`);
    print(`  refunds executed: ${refunds.length} (${refunds.join(', ') || 'none'})`);
    return final;
  });
  return {
    url: server.url,
    signIn,
    refunds,
    done,
    close: async () => {
      inbox.close();
      await server.close();
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const demo = await inboxDemo((line) => console.log(line));
  process.once('SIGINT', () => void demo.close());
}
