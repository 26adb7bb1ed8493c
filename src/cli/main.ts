#!/usr/bin/env node
/**
 * The `toolgate` command (the package's `bin`). All behaviour lives in program.ts so tests can run it
 * in-process; this file wires it to the process.
 */
import { run } from './program.js';

// A reader that stops early (`toolgate lint x | head`) is not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

const code = await run(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  color: process.stdout.isTTY === true && !('NO_COLOR' in process.env) && process.env['TERM'] !== 'dumb',
});
process.exitCode = code;
