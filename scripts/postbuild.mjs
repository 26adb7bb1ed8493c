/* global URL, console, process */
// After tsc: make the CLI entry executable (tsc keeps its shebang but not a mode), so that the
// package's `bin` runs directly from a fresh clone after `npm install` (prepare → build).
import { chmodSync, existsSync } from 'node:fs';

const bin = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(bin)) {
  console.error('postbuild: dist/cli/main.js is missing');
  process.exit(1);
}
chmodSync(bin, 0o755);
