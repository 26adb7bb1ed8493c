/** `toolgate demo`: run examples/demo.ts. */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import type { Cli, CliIO } from './context.js';
import { EXIT, exitCodes } from './exit-codes.js';

export function registerDemo(program: Command, cli: Cli): void {
  exitCodes(program.command('demo').description('Run the demo (what `npm run demo` runs).'), [
    [EXIT.OK, 'the demo ran'],
    [EXIT.USAGE, 'the demo is not in this installation, or could not be run'],
  ]).action(async () => {
    cli.exit(await runDemo(cli.io));
  });
}

/**
 * Why plain Node did not import the TypeScript source: Node 20 knows no `.ts` (ERR_UNKNOWN_FILE_EXTENSION);
 * Node 22.18+ and 24 strip types but not under node_modules, nor TypeScript-only syntax, nor `.js` specifiers
 * that name a `.ts` file. Each means "run it with tsx", not "the demo is broken".
 */
const TS_REFUSED: ReadonlySet<string> = new Set([
  'ERR_UNKNOWN_FILE_EXTENSION',
  'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING',
  'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX',
  'ERR_MODULE_NOT_FOUND',
]);

/**
 * Runs examples/demo.ts's `main(print)`: the compiled examples/demo.js where one was built, else the
 * TypeScript source — imported directly under tsx (`npm run toolgate`, the tests), or run with
 * `node --import tsx` (what `npm run demo` does) when plain Node cannot import TypeScript, as from the
 * built bin in a clone.
 */
export async function runDemo(
  io: Pick<CliIO, 'stdout' | 'stderr'>,
  base: URL = new URL('../../examples/', import.meta.url),
): Promise<number> {
  const out = (line: string): void => io.stdout(`${line}\n`);
  const err = (line: string): void => io.stderr(`${line}\n`);
  const js = new URL('demo.js', base);
  const ts = new URL('demo.ts', base);
  const url = existsSync(js) ? js : existsSync(ts) ? ts : null;
  if (url === null) {
    err('the demo is not in this installation (examples/demo.ts is not here); run it from a clone with `npm run demo`');
    return EXIT.USAGE;
  }
  let mod: { main?: (print?: (line: string) => void) => unknown };
  try {
    mod = (await import(url.href)) as typeof mod;
  } catch (error) {
    if (url === ts && TS_REFUSED.has(String((error as NodeJS.ErrnoException).code)))
      return runWithTsx(fileURLToPath(ts), io);
    err(`cannot load the demo from ${fileURLToPath(url)}: ${(error as Error).message}`);
    return EXIT.USAGE;
  }
  if (typeof mod.main !== 'function') {
    err(`${fileURLToPath(url)} exports no main(print) function`);
    return EXIT.USAGE;
  }
  await mod.main((line: string) => out(line));
  return EXIT.OK;
}

function runWithTsx(file: string, io: Pick<CliIO, 'stdout' | 'stderr'>): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: dirname(dirname(file)),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => io.stdout(chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => io.stderr(chunk.toString()));
    child.on('error', (error) => {
      io.stderr(`cannot run the demo with tsx: ${error.message}; run \`npm run demo\` in a clone\n`);
      resolve(EXIT.USAGE);
    });
    child.on('close', (code) => resolve(code === 0 ? EXIT.OK : EXIT.USAGE));
  });
}
