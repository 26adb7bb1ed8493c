/**
 * `npm run demo` (and `toolgate demo`): toolgate on a multi-tenant scenario, printed as tables.
 */
import { pathToFileURL } from 'node:url';
import { gateDemo } from './demo/gate.js';
import { inboxDemo } from './demo/inbox.js';
import { runnerDemo } from './demo/runner.js';

export async function main(print: (line: string) => void = (line) => console.log(line)): Promise<void> {
  await gateDemo(print);
  print('');
  await runnerDemo(print);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // `npm run demo -- --inbox`: the approval inbox on the demo's paused run (stops with ^C).
  const run = process.argv.includes('--inbox')
    ? inboxDemo((line) => console.log(line)).then((demo) => {
        process.once('SIGINT', () => void demo.close());
      })
    : main();
  run.catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
