/**
 * A small fuzz harness for text-in parsers: random and mutated inputs, each of which must either be
 * accepted (the target returns) or refused with a clear error (by default a toolgate ConfigurationError
 * with a message), within a time budget, without polluting Object.prototype.
 *
 * Point it at any loader `(text: string) => result` that throws ConfigurationError on bad input:
 *
 *   const stats = await fuzzText({ target: (text) => loadPolicy(text), seeds: [validYaml, validJson], runs: 2_000 });
 *
 * It returns counts (accepted / refused) so a test can check that both outcomes were reached.
 */
import { isToolgateError, ErrorCode } from '../../src/index.js';
import { prng } from './size.js';

export interface FuzzOptions {
  /** The parser under test. May be async. */
  readonly target: (text: string) => unknown;
  /** Valid inputs to mutate; mutation finds the edges of the grammar faster than random text. */
  readonly seeds: readonly string[];
  /** How many inputs to try. */
  readonly runs: number;
  /** The PRNG seed (replay a failure with the same seed). */
  readonly seed: number;
  /** What counts as a clear refusal. @default a toolgate ConfigurationError with a non-empty message */
  readonly clearError?: (error: unknown) => boolean;
  /** The most one input may take, in ms. @default 2_000 */
  readonly budgetMs?: number;
}

export interface FuzzStats {
  readonly accepted: number;
  readonly refused: number;
}

/** One input that broke the contract. */
export class FuzzFailure extends Error {
  override name = 'FuzzFailure';
  readonly input: string;
  constructor(message: string, input: string, options?: { cause?: unknown }) {
    const shown =
      input.length > 300 ? `${JSON.stringify(input.slice(0, 300))}... (${input.length} chars)` : JSON.stringify(input);
    super(`${message}\n  input: ${shown}`, options);
    this.input = input;
  }
}

export function isConfigurationError(error: unknown): boolean {
  return isToolgateError(error) && error.code === ErrorCode.CONFIGURATION && error.message.length > 0;
}

/** Tokens that stress parsers: structure, escapes, odd numbers, prototype keys, hostile Unicode, size. */
export const TOKENS: readonly string[] = [
  '{',
  '}',
  '[',
  ']',
  '"',
  "'",
  ':',
  ',',
  '\\',
  '\\u0000',
  '\\ud800',
  '\n',
  '\r\n',
  '\t',
  ' ',
  '#',
  '- ',
  '---',
  '&a',
  '*a',
  '!!js/function',
  '<<',
  'null',
  'true',
  'false',
  '0',
  '-0',
  '1e999',
  '-1e999',
  'NaN',
  '0x10',
  '1_000',
  '9007199254740993',
  '"__proto__"',
  '__proto__',
  '"constructor"',
  '{"__proto__":{"polluted":true}}',
  '"prototype"',
  'toString',
  '\u202e',
  '\u200b',
  '\ufeff',
  '\ud800',
  'ǅ',
  'ß',
  'İ',
  'ｓｅａｒｃｈ',
  'se\u0430rch',
  'allow',
  'deny',
  'ask',
  'rules',
  'tools',
  'tags',
  'name',
  'result',
  'fallback',
  'arguments',
  'function',
  'tool_use',
  'function_call',
  'functionCall',
];

/** One mutation of `text`. */
export function mutate(text: string, random: () => number): string {
  const at = (): number => Math.floor(random() * (text.length + 1));
  const token = (): string => TOKENS[Math.floor(random() * TOKENS.length)]!;
  switch (Math.floor(random() * 8)) {
    case 0: {
      const a = at();
      return text.slice(0, a) + text.slice(Math.min(text.length, a + 1 + Math.floor(random() * 8)));
    }
    case 1: {
      const a = at();
      return text.slice(0, a) + token() + text.slice(a);
    }
    case 2: {
      const a = at();
      const b = Math.min(text.length, a + Math.floor(random() * 40));
      return text.slice(0, b) + text.slice(a, b) + text.slice(b);
    }
    case 3: {
      const a = Math.min(at(), Math.max(0, text.length - 1));
      return text.slice(0, a) + String.fromCharCode(Math.floor(random() * 0x80)) + text.slice(a + 1);
    }
    case 4:
      return text.slice(0, at());
    case 5: {
      const a = at();
      const deep = Math.floor(random() * 2_000);
      return text.slice(0, a) + '['.repeat(deep) + ']'.repeat(random() < 0.5 ? deep : 0) + text.slice(a);
    }
    case 6: {
      const a = at();
      return `${text.slice(0, a)}"${'x'.repeat(Math.floor(random() * 100_000))}"${text.slice(a)}`;
    }
    default: {
      const a = at();
      return text.slice(0, a) + String.fromCodePoint(Math.floor(random() * 0x30000)) + text.slice(a);
    }
  }
}

/** Random text: ASCII structure most of the time, any code point some of the time. */
export function randomText(random: () => number, maxLength = 200): string {
  const n = Math.floor(random() * maxLength);
  let out = '';
  for (let i = 0; i < n; i++) {
    const r = random();
    if (r < 0.3) out += TOKENS[Math.floor(random() * TOKENS.length)]!;
    else if (r < 0.9) out += String.fromCharCode(0x20 + Math.floor(random() * 0x5f));
    else out += String.fromCodePoint(Math.floor(random() * 0x110000));
  }
  return out;
}

/** Runs the fuzz loop; throws a FuzzFailure on the first input that breaks the contract. */
export async function fuzzText(options: FuzzOptions): Promise<FuzzStats> {
  const random = prng(options.seed);
  const clear = options.clearError ?? isConfigurationError;
  const budget = options.budgetMs ?? 2_000;
  let accepted = 0;
  let refused = 0;
  for (let i = 0; i < options.runs; i++) {
    let input: string;
    if (options.seeds.length > 0 && random() < 0.8) {
      input = options.seeds[Math.floor(random() * options.seeds.length)]!;
      const rounds = 1 + Math.floor(random() * 4);
      for (let r = 0; r < rounds; r++) input = mutate(input, random);
    } else {
      input = randomText(random);
    }
    const started = performance.now();
    try {
      await options.target(input);
      accepted++;
    } catch (error) {
      if (!clear(error))
        throw new FuzzFailure(`the target threw something other than a clear error: ${String(error)}`, input, {
          cause: error,
        });
      refused++;
    }
    const took = performance.now() - started;
    if (took > budget) throw new FuzzFailure(`the target took ${took.toFixed(0)} ms (budget ${budget} ms)`, input);
    if (Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'))
      throw new FuzzFailure('Object.prototype was polluted', input);
  }
  return { accepted, refused };
}
