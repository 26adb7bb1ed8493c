// Attacks on the proof in src/gateway/answer-lines.ts (branch answer5) that an upstream's result text is what
// JSON.stringify writes for its parse: wherever the splice is taken, its line must be JSON.stringify's, byte
// for byte. Exhaustive where the space is small (every \uXXXX escape in both cases; every short string of
// backslashes, quotes, slashes and escape letters; number texts of many shapes), and by perturbation of
// canonical texts (whitespace, escapes, numbers, duplicate keys) on random trees.
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { answerLineOf, noteAnswerLine } from '../../src/gateway/answer-lines.js';
import { parseJsonText } from '../../src/json-text.js';

/** The client's line for an upstream `line` (parsed as the upstream's reader parses it), and JSON.stringify's. */
function both(line: string, id: string | number = 7): { spliced: string | undefined; before: string } | undefined {
  let parsed: { result?: unknown };
  try {
    // As the upstream's reader parses it (src/json-text.ts): JSON.parse misreads an escaped key on Node 24 once an
    // earlier parse in the process (another test file of the worker) poisoned V8's transitions.
    parsed = parseJsonText(line) as { result?: unknown };
  } catch {
    return undefined; // not JSON: the upstream's reader skips it
  }
  noteAnswerLine(parsed.result, line);
  const message = { jsonrpc: '2.0', id, result: parsed.result } as JSONRPCMessage;
  return { spliced: answerLineOf(message), before: serializeMessage(message) };
}

const wrap = (resultText: string): string => `{"jsonrpc":"2.0","id":"toolgate-raw:1","result":${resultText}}`;

/** Asserts that every line of `lines` the splice takes is JSON.stringify's; how many it took. */
function check(lines: Iterable<string>): number {
  let taken = 0;
  const wrong: string[] = [];
  for (const line of lines) {
    const out = both(line);
    if (out?.spliced === undefined) continue;
    taken++;
    if (out.spliced !== out.before) wrong.push(`${line}\n -> ${out.spliced} != ${out.before}`);
  }
  expect(wrong.slice(0, 5)).toEqual([]);
  return taken;
}

describe('answer-lines: the splice only where the bytes are JSON.stringify', () => {
  it('every \\uXXXX escape, lower and upper case, in a value and in a key', () => {
    const lines: string[] = [];
    for (let c = 0; c < 0x10000; c++) {
      const hex = c.toString(16).padStart(4, '0');
      for (const h of [hex, hex.toUpperCase()]) {
        lines.push(wrap(`{"content":[{"type":"text","text":"a\\u${h}b"}]}`));
        lines.push(wrap(`{"k\\u${h}":1,"content":[]}`));
      }
    }
    expect(check(lines)).toBeGreaterThan(0);
  });

  it('every short string of backslashes, quotes, slashes and escape letters', () => {
    const alphabet = ['\\', '"', '/', 'u', '0', '1', 'b', 'n', 'f', 'e', 'x'];
    const lines: string[] = [];
    const grow = (prefix: string, n: number): void => {
      lines.push(wrap(`{"t":"${prefix}","${prefix}":"${prefix}"}`));
      if (n === 0) return;
      for (const a of alphabet) grow(prefix + a, n - 1);
    };
    grow('', 5);
    expect(check(lines)).toBeGreaterThan(0);
  });

  it('number texts of many shapes', () => {
    const mantissas = [
      '0',
      '1',
      '5',
      '10',
      '100',
      '123456789012345678901',
      '9007199254740993',
      '0.1',
      '0.10',
      '1.0',
      '1.5',
      '0.000001',
      '0.0000001',
      '1.7976931348623157',
      '4.9406564584124654',
    ];
    const exponents = [
      '',
      'e0',
      'e1',
      'e+1',
      'e-1',
      'E1',
      'e21',
      'e+21',
      'e-7',
      'e-324',
      'e-323',
      'e308',
      'e+308',
      'e309',
      'e-400',
      'e20',
      'e+20',
    ];
    const lines: string[] = [];
    for (const sign of ['', '-'])
      for (const m of mantissas)
        for (const e of exponents) lines.push(wrap(`{"n":${sign}${m}${e},"a":[${sign}${m}${e}]}`));
    for (let i = 0; i < 2000; i++) {
      const x = [Math.random() * 10 ** (Math.random() * 40 - 20), Math.random() * 2 ** 64, 5e-324 * i][i % 3]!;
      lines.push(wrap(`{"n":${String(x)},"m":${String(-x)}}`));
    }
    expect(check(lines)).toBeGreaterThan(0);
  });

  it('the envelope: any other member, order, whitespace, id form', () => {
    const r = '{"content":[]}';
    const lines = [
      `{"jsonrpc":"2.0","id":"toolgate-raw:1","result":${r}}`,
      `{"result":${r},"id":"toolgate-raw:1","jsonrpc":"2.0"}`,
      `{"id":"toolgate-raw:1","result":${r},"jsonrpc":"2.0"}`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:1","result":${r},"result":${r}}`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:1","result":{"a":1},"result":${r}}`,
      `{"jsonrpc":"2.0","jsonrpc":"2.0","id":"toolgate-raw:1","result":${r}}`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:1","id":"toolgate-raw:2","result":${r}}`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:1x","result":${r}}`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:","result":${r}}`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:1\\u0000","result":${r}}`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:1","result":${r},"error":null}`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:1","result":${r} }`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:1","result":${r}}\r`,
      `\ufeff{"jsonrpc":"2.0","id":"toolgate-raw:1","result":${r}}`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:1","result":[]}`,
      `{"jsonrpc":"2.0","id":"toolgate-raw:1","result":{"a":"}"},"x":1}`,
    ];
    check(lines);
    // The client's id as JSON.stringify writes it, whatever it is.
    for (const id of [0, -0, 1, 2 ** 53 - 1, '', 'a"b', '\ud800', '\u2028', 'x\\y'])
      expect(both(wrap(r), id)!.spliced ?? both(wrap(r), id)!.before).toEqual(both(wrap(r), id)!.before);
  });

  it('canonical texts of random trees, perturbed one place at a time', () => {
    const key = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 6 }),
      fc.constantFrom(
        '__proto__',
        'constructor',
        'toJSON',
        'valueOf',
        'a',
        'b',
        '',
        '-1',
        '1e3',
        'NaN',
        'Infinity',
        '0',
      ),
    );
    const leaf = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 8 }),
      fc.constantFrom('\u2028', '\u2029', '\\', '"', '/', '\u0000', '\u001f', '\u007f', 'é', '😀'),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
    );
    const { value } = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        leaf,
        fc.array(tie('value'), { maxLength: 3 }),
        fc.dictionary(key, tie('value'), { maxKeys: 4 }),
      ),
    }));
    const perturb = (text: string, at: number, how: number): string => {
      const i = at % (text.length + 1);
      switch (how % 8) {
        case 0: // whitespace at any place
          return `${text.slice(0, i)} ${text.slice(i)}`;
        case 1: {
          // a character at or after `i` written as a \u escape (only inside a string it parses)
          const c = text.charCodeAt(i);
          return `${text.slice(0, i)}\\u${c.toString(16).padStart(4, '0')}${text.slice(i + 1)}`;
        }
        case 2: // a slash escaped
          return text.replace('/', '\\/');
        case 3: {
          // a key written twice (the later value wins, in the first place)
          const k = text.indexOf('":', i);
          const q = k < 0 ? -1 : text.lastIndexOf('"', k - 1);
          return q < 0 ? text : `${text.slice(0, q)}${text.slice(q, k + 2)}0,${text.slice(q)}`;
        }
        case 4: // a number's other forms
          return text.replace(/(?<=[:,[])(-?\d+)(?=[,\]}])/, (n) => [`${n}.0`, `${n}e0`, `-0`, `0${n}`][at % 4]!);
        case 5:
          return text.replace(/e\+/, 'e');
        case 6: // an escaped pair instead of an emoji
          return text.replace('😀', '\\ud83d\\ude00');
        default:
          return text;
      }
    };
    fc.assert(
      fc.property(value, fc.nat(), fc.nat(), (v, at, how) => {
        const result = JSON.stringify({ content: [], v });
        check([
          wrap(result),
          wrap(perturb(result, at, how)),
          wrap(perturb(perturb(result, at, how), at * 7 + 3, how + 3)),
        ]);
      }),
      { numRuns: 3000 },
    );
  });

  it('an object changed after the parse (the known risk): a key added or removed is caught by the count', () => {
    const line = wrap('{"content":[],"structuredContent":{"a":1,"b":{"c":2}}}');
    const parsed = parseJsonText(line) as { result: { structuredContent: Record<string, unknown> } };
    noteAnswerLine(parsed.result, line);
    const send = () => {
      const message = { jsonrpc: '2.0', id: 1, result: parsed.result } as JSONRPCMessage;
      return answerLineOf(message) ?? serializeMessage(message);
    };
    parsed.result.structuredContent['x'] = 1;
    expect(send()).toEqual(serializeMessage({ jsonrpc: '2.0', id: 1, result: parsed.result } as JSONRPCMessage));
    delete parsed.result.structuredContent['a'];
    delete parsed.result.structuredContent['x'];
    expect(send()).toEqual(serializeMessage({ jsonrpc: '2.0', id: 1, result: parsed.result } as JSONRPCMessage));
  });
});
