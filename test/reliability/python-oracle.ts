/**
 * A client for scripts/canonical-oracle.py: one python3 process for a whole run, JSON lines both ways.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { linesOf } from '../lines.js';

const SCRIPT = fileURLToPath(new URL('../../scripts/canonical-oracle.py', import.meta.url));

export interface OracleGreeting {
  /** Python's unicodedata.unidata_version. */
  readonly unicode: string;
  readonly python: string;
  /** Inclusive ranges of the code points Python's database assigns (category other than Cn). */
  readonly assigned: readonly (readonly [number, number])[];
}

export class PythonOracle {
  readonly greeting: OracleGreeting;
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #lines: AsyncGenerator<string>;

  private constructor(child: ChildProcessWithoutNullStreams, lines: AsyncGenerator<string>, greeting: OracleGreeting) {
    this.#child = child;
    this.#lines = lines;
    this.greeting = greeting;
  }

  /** Starts python3 and tells it the White_Space set to trim. */
  static async start(whiteSpace: string): Promise<PythonOracle> {
    const child = spawn('python3', [SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const lines = linesOf(child.stdout);
    const first = await lines.next();
    if (first.done) throw new Error(`the python oracle did not start: ${stderr}`);
    const greeting = JSON.parse(first.value) as OracleGreeting;
    child.stdin.write(`${JSON.stringify({ whiteSpace })}\n`);
    return new PythonOracle(child, lines, greeting);
  }

  /** Python's canonical forms of a batch of strings, in order. */
  async canonical(batch: readonly string[]): Promise<string[]> {
    this.#child.stdin.write(`${JSON.stringify(batch)}\n`);
    const next = await this.#lines.next();
    if (next.done) throw new Error('the python oracle ended early');
    return JSON.parse(next.value) as string[];
  }

  async close(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    this.#child.stdin.end('[]\n');
    await exited;
    await this.#lines.return(undefined);
  }
}
