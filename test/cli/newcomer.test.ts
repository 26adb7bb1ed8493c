// Issue 16: the toolgate command as a newcomer and a CI job meet it — run in-process through `run`, as
// the bin runs it (test/cli/bin.test.ts runs the built bin for each command).
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import stringWidth from 'string-width';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/program.js';
import { parseArguments } from '../../src/formats/index.js';
import { defineTool } from '../../src/tool.js';
import { ToolRegistry } from '../../src/registry.js';
import { SHOP } from './fixtures.js';

let dir = '';
const at = (name: string): string => join(dir, name);

async function cli(args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  let restore = (): void => {};
  if (stdin !== undefined) {
    // `-` reads process.stdin: give it the text for this run.
    const { Readable } = await import('node:stream');
    const fake = Readable.from([Buffer.from(stdin)]);
    const spy = vi.spyOn(process, 'stdin', 'get').mockReturnValue(fake as unknown as typeof process.stdin);
    restore = () => spy.mockRestore();
  }
  try {
    const code = await run(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
    return { code, stdout, stderr };
  } finally {
    restore();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolgate-newcomer-'));
  await writeFile(at('shop.yaml'), SHOP);
});
afterEach(() => vi.restoreAllMocks());

type Row = {
  line: number;
  item: number | null;
  tool: string;
  effect: string;
  by: string;
  rule: string | null;
  reason: string;
};
const rowsOf = (stdout: string): Row[] =>
  stdout
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Row);

describe('empty or blank arguments are refused on every route, never run as {}', () => {
  const blank = (args: string) => [
    JSON.stringify({ id: 'c', type: 'function', function: { name: 'search', arguments: args } }),
    JSON.stringify({ type: 'function_call', call_id: 'r', name: 'search', arguments: args }),
    JSON.stringify({ name: 'search', arguments: args }),
  ];

  it('check: "", "  " and "\\n\\t" deny at stage arguments in every string-arguments shape', async () => {
    await writeFile(at('blank.jsonl'), [...blank(''), ...blank('  '), ...blank('\n\t')].join('\n'));
    const { code, stdout } = await cli(['check', '--json', '-p', at('shop.yaml'), at('blank.jsonl')]);
    expect(code).toBe(0);
    const rows = rowsOf(stdout);
    expect(rows).toHaveLength(9);
    for (const row of rows) {
      expect(row.effect).toBe('deny');
      expect(row.by).toBe('malformed_arguments');
      expect(row.reason).toMatch(/the arguments are (an empty string|blank); expected a JSON object/);
    }
    // "{}" itself is the way to call a tool without parameters.
    const ok = await cli(['check', '--json', '-p', at('shop.yaml'), '-'], blank('{}').join('\n'));
    expect(rowsOf(ok.stdout).map((r) => r.effect)).toEqual(['allow', 'allow', 'allow']);
  });

  it('absent or null arguments are refused where the provider requires them, {} where optional', async () => {
    const input = [
      { id: 'a', type: 'function', function: { name: 'search' } },
      { id: 'b', type: 'function', function: { name: 'search', arguments: null } },
      { type: 'function_call', call_id: 'c', name: 'search' },
      { type: 'tool_use', id: 'd', name: 'search' },
      { name: 'search', arguments: null },
      { functionCall: { name: 'search' } },
      { name: 'search' },
    ]
      .map((v) => JSON.stringify(v))
      .join('\n');
    const { stdout } = await cli(['check', '--json', '-p', at('shop.yaml'), '-'], input);
    expect(rowsOf(stdout).map((r) => [r.effect, r.by])).toEqual([
      ['deny', 'malformed_arguments'],
      ['deny', 'malformed_arguments'],
      ['deny', 'malformed_arguments'],
      ['deny', 'malformed_arguments'],
      ['deny', 'malformed_arguments'],
      ['allow', 'rule'],
      ['allow', 'rule'],
    ]);
    expect(rowsOf(stdout)[0]!.reason).toContain('the call has no arguments; expected a JSON object');
  });

  it('explain --call refuses it too (exit 3), and so do the registry and parseArguments', async () => {
    const call = JSON.stringify({ id: 'c', type: 'function', function: { name: 'search', arguments: '  ' } });
    const explained = await cli(['explain', '-p', at('shop.yaml'), '--call', call]);
    expect(explained.code).toBe(3);
    expect(explained.stdout).toContain('the arguments are blank');
    expect(parseArguments('')).toEqual({ ok: false, problem: expect.stringContaining('an empty string') });
    const registry = new ToolRegistry();
    let ran = false;
    registry.register(
      defineTool({
        name: 'search',
        parameters: { type: 'object', properties: { query: { type: 'string' } } },
        execute: () => {
          ran = true;
          return 'results';
        },
      }),
    );
    const [result] = await registry.executeToolCalls([
      { id: 'c', type: 'function', function: { name: 'search', arguments: ' ' } },
    ]);
    expect(ran).toBe(false);
    expect(result).toMatchObject({ role: 'tool', tool_call_id: 'c' });
  });
});

describe('explain names a rule that could not be judged as such', () => {
  it('an allow rule that cannot judge "5" is rule_error, with why — not "by rule"', async () => {
    const { code, stdout } = await cli(['explain', '-p', at('shop.yaml'), 'tip', '{"amount":"5"}']);
    expect(code).toBe(3);
    const [head, why] = stdout.split('\n');
    expect(head).toBe('tip  DENY  (stage policy, by rule_error: allow rule "small_tips" could not be judged)');
    expect(why).toContain('argument "amount" must be a number to compare, got "5"');
    expect(head).not.toMatch(/by rule "small_tips"/);
  });

  it('check names it the same way in its table', async () => {
    const { stdout } = await cli(['check', '-p', at('shop.yaml'), '-'], '{"name":"tip","arguments":{"amount":"5"}}');
    expect(stdout).toMatch(/1\s+tip\s+deny\s+rule_error: allow rule "small_tips" could not be judged/);
  });
});

describe('check --fail-on, exit codes and the summary line', () => {
  const calls = [
    '{"name":"search","arguments":{"query":"x"}}',
    '{"name":"refund","arguments":{"amount":5}}',
    '{"name":"delete_account","arguments":{}}',
  ];

  it('without --fail-on: exit 0 and a summary', async () => {
    const { code, stdout } = await cli(['check', '-p', at('shop.yaml'), '-'], calls.join('\n'));
    expect(code).toBe(0);
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('3 calls: 1 allowed, 1 denied, 1 needs approval');
  });

  it('--fail-on deny exits 3 on a denial; --fail-on ask exits 3 on a denial, else 4 on an ask', async () => {
    const deny = await cli(['check', '--fail-on', 'deny', '-p', at('shop.yaml'), '-'], calls.join('\n'));
    expect(deny.code).toBe(3);
    expect(deny.stdout).toContain('3 calls: 1 allowed, 1 denied, 1 needs approval (fails --fail-on deny)');
    expect((await cli(['check', '--fail-on', 'ask', '-p', at('shop.yaml'), '-'], calls.join('\n'))).code).toBe(3);
    const asks = [calls[0], calls[1]].join('\n');
    expect((await cli(['check', '--fail-on', 'deny', '-p', at('shop.yaml'), '-'], asks)).code).toBe(0);
    const ask = await cli(['check', '--fail-on', 'ask', '-p', at('shop.yaml'), '-'], asks);
    expect(ask.code).toBe(4);
    expect(ask.stdout).toContain('2 calls: 1 allowed, 0 denied, 1 needs approval (fails --fail-on ask)');
    const pass = await cli(['check', '--fail-on', 'ask', '-p', at('shop.yaml'), '-'], calls[0]!);
    expect(pass.code).toBe(0);
    expect(pass.stdout).toContain('1 call: 1 allowed, 0 denied, 0 need approval (passes --fail-on ask)');
  });

  it('a line that is not JSON fails --fail-on deny; with --json the summary goes to stderr; a bad value is a usage error', async () => {
    const bad = await cli(
      ['check', '--json', '--fail-on', 'deny', '-p', at('shop.yaml'), '-'],
      `${calls[0]}\nnot json`,
    );
    expect(bad.code).toBe(3);
    expect(rowsOf(bad.stdout).map((r) => r.effect)).toEqual(['allow', 'deny']);
    expect(bad.stderr.trim()).toBe('2 calls: 1 allowed, 1 denied, 0 need approval (fails --fail-on deny)');
    const wrong = await cli(['check', '--fail-on', 'warn', '-p', at('shop.yaml'), '-'], calls[0]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/Allowed choices are deny, ask/);
    const ghost = await cli(['check', '--agent', 'ghost', '-p', at('shop.yaml'), '-'], calls[0]);
    expect(ghost.code).toBe(2);
  });
});

describe('check decides each call of a whole assistant message', () => {
  const openai = {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'a', type: 'function', function: { name: 'search', arguments: '{"query":"x"}' } },
      { id: 'b', type: 'function', function: { name: 'delete_account', arguments: '{}' } },
    ],
  };
  const anthropic = {
    role: 'assistant',
    content: [
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 't1', name: 'search', input: { query: 'x' } },
      { type: 'tool_use', id: 't2', name: 'refund', input: { amount: 3 } },
    ],
  };
  const gemini = {
    role: 'model',
    parts: [
      { text: 'ok' },
      { functionCall: { name: 'tip', args: { amount: 2 } } },
      { functionCall: { name: 'tip', args: { amount: 50 } } },
    ],
  };
  const responses = [
    { type: 'reasoning', id: 'rs', summary: [] },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi' }] },
    { type: 'function_call', call_id: 'f1', name: 'search', arguments: '{"query":"y"}' },
    { type: 'web_search_call', id: 'ws', status: 'completed' },
  ];

  it('OpenAI tool_calls, an Anthropic content array, Gemini parts, a Responses output array', async () => {
    const input = [openai, anthropic, gemini, responses, { output: responses }, anthropic.content, { message: gemini }]
      .map((v) => JSON.stringify(v))
      .join('\n');
    const { code, stdout } = await cli(['check', '--json', '-p', at('shop.yaml'), '-'], input);
    expect(code).toBe(0);
    const rows = rowsOf(stdout).map((r) => [`${r.line}.${r.item}`, r.tool, r.effect]);
    expect(rows).toEqual([
      ['1.1', 'search', 'allow'],
      ['1.2', 'delete_account', 'deny'],
      ['2.1', 'search', 'allow'],
      ['2.2', 'refund', 'ask'],
      ['3.1', 'tip', 'allow'],
      ['3.2', 'tip', 'deny'],
      ['4.1', 'search', 'allow'],
      ['4.2', '', 'deny'],
      ['5.1', 'search', 'allow'],
      ['5.2', '', 'deny'],
      ['6.1', 'search', 'allow'],
      ['6.2', 'refund', 'ask'],
      ['7.1', 'tip', 'allow'],
      ['7.2', 'tip', 'deny'],
    ]);
    expect(rowsOf(stdout)[7]!.reason).toContain(
      'a message item of type "web_search_call" is not a call toolgate decides',
    );
    const table = await cli(['check', '-p', at('shop.yaml'), '-'], JSON.stringify(openai));
    expect(table.stdout).toMatch(/^1\.2\s+delete_account\s+deny/m);
    expect(table.stdout).toContain('2 calls: 1 allowed, 1 denied, 0 need approval');
  });

  it('an unknown item of a message is refused, never skipped; a message without calls decides nothing', async () => {
    const input = [
      JSON.stringify({ role: 'assistant', tool_calls: { id: 'x', type: 'function' } }),
      JSON.stringify({ role: 'assistant', content: { type: 'tool_use', id: 'y', name: 'delete_account', input: {} } }),
      JSON.stringify({
        role: 'assistant',
        content: [{ type: 'server_tool_use', id: 's', name: 'web_search', input: {} }],
      }),
      JSON.stringify({ role: 'assistant', content: 'Just text.' }),
      JSON.stringify([42]),
    ].join('\n');
    const { stdout } = await cli(['check', '--json', '-p', at('shop.yaml'), '-'], input);
    expect(rowsOf(stdout).map((r) => [r.line, r.item, r.effect])).toEqual([
      [1, 1, 'deny'],
      [2, 1, 'deny'],
      [3, 1, 'deny'],
      [5, 1, 'deny'],
    ]);
  });
});

describe('output hygiene', () => {
  it('an ARGS value that is JSON but not an object is reported as such (parsed once), exit 2', async () => {
    const { code, stderr } = await cli(['explain', '-p', at('shop.yaml'), 'search', '"x"']);
    expect(code).toBe(2);
    expect(stderr).toContain('ARGS is valid JSON but not an object: got "x"');
    expect(stderr).not.toContain('not valid JSON');
    expect((await cli(['explain', '-p', at('shop.yaml'), 'search', '[1]'])).stderr).toContain('got an array');
    expect((await cli(['explain', '-p', at('shop.yaml'), 'search', '{'])).stderr).toContain('ARGS is not valid JSON');
  });

  it('with no rules, explain says "no rules: fallback deny"', async () => {
    await writeFile(at('none.yaml'), 'version: 1\ntools:\n  x: {}\n');
    const { code, stdout } = await cli(['explain', '-p', at('none.yaml'), 'x']);
    expect(code).toBe(3);
    expect(stdout).toContain('rules\n  no rules: fallback deny\n');
    expect(stdout).not.toContain('not evaluated');
  });

  it('a policy file that cannot be read exits 2 (as --help says) in every command; a refused one exits 1', async () => {
    const missing = at('missing.yaml');
    for (const args of [
      ['explain', '-p', missing, 'x'],
      ['check', '-p', missing, '-'],
      ['lint', missing],
      ['watch', '-p', missing],
    ]) {
      let stdout = '';
      const code = await run(args, {
        stdout: (t) => (stdout += t),
        stderr: (t) => (stdout += t),
        stop: Promise.resolve(),
      });
      expect(code, args.join(' ')).toBe(2);
      expect(stdout).toContain('cannot read the file');
    }
    await writeFile(at('broken.yaml'), 'version: 1\nrules: [\n');
    expect((await cli(['explain', '-p', at('broken.yaml'), 'x'])).code).toBe(1);
  });

  it('confusable names: lint findings at the name (4:3), and explain/check print findings, not process warnings', async () => {
    await writeFile(at('confusable.yaml'), 'version: 1\ntools:\n  read_file: {}\n  rеad_file: {}\nrules: []\n');
    const lint = await cli(['lint', '--json', at('confusable.yaml')]);
    const findings = (JSON.parse(lint.stdout) as { findings: { code: string; line: number; column: number }[] })
      .findings;
    expect(findings.filter((f) => f.code === 'confusable-name').map((f) => `${f.line}:${f.column}`)).toEqual([
      '4:3',
      '4:3',
    ]);
    const warn = vi.spyOn(process, 'emitWarning');
    const explain = await cli(['explain', '-p', at('confusable.yaml'), 'read_file']);
    const check = await cli(['check', '-p', at('confusable.yaml'), '-'], '{"name":"read_file","arguments":{}}');
    expect(warn).not.toHaveBeenCalled();
    for (const out of [explain.stderr, check.stderr])
      expect(out).toContain(`${at('confusable.yaml')}:4:3  warning  confusable-name  tool name "rеad_file"`);
  });

  it('.json policy files are strict JSON, with line:column', async () => {
    await writeFile(at('trailing.json'), '{\n  "version": 1,\n  "rules": [],\n}\n');
    const lint = await cli(['lint', at('trailing.json')]);
    expect(lint.code).toBe(1);
    expect(lint.stdout).toContain(
      `${at('trailing.json')}:3:14  error    json  a trailing comma before "}" (JSON allows none)`,
    );
    await writeFile(at('comment.json'), '{\n  "version": 1 // one\n}\n');
    expect((await cli(['lint', at('comment.json')])).stdout).toContain(
      ':2:16  error    json  expected "," or "}", found "/"',
    );
    await writeFile(at('single.json'), "{'version': 1}");
    expect((await cli(['explain', '-p', at('single.json'), 'x'])).stderr).toContain(
      'single.json:1:2: expected a double-quoted property name',
    );
    // The same text as YAML is fine (flow mappings allow a trailing comma), and strict JSON loads.
    await writeFile(at('trailing.yaml'), '{\n  "version": 1,\n  "rules": [],\n}\n');
    expect((await cli(['lint', at('trailing.yaml')])).code).toBe(0);
    await writeFile(at('good.json'), '\uFEFF{\n  "version": 1,\n  "tools": { "x": {} },\n  "rules": []\n}\n');
    expect((await cli(['lint', at('good.json')])).stdout).toContain('no problems found');
  });

  it('tables align by display width: a full-width name takes two columns a letter', async () => {
    await writeFile(
      at('wide.yaml'),
      'version: 1\ntools:\n  search: {}\nrules:\n  - { name: all, tools: search, result: allow }\n',
    );
    const { stdout } = await cli(
      ['check', '-p', at('wide.yaml'), '-'],
      ['{"name":"ｓｅａｒｃｈ","arguments":{}}', '{"name":"search","arguments":{}}'].join('\n'),
    );
    const lines = stdout.split('\n').slice(0, 3);
    const column = (line: string) => stringWidth(line.slice(0, line.indexOf('allow')));
    expect(column(lines[1]!)).toBe(column(lines[2]!));
    expect(stringWidth(lines[0]!.slice(0, lines[0]!.indexOf('decision')))).toBe(column(lines[1]!));
  });

  it('the demo table aligns by display width (the full-width ＲＥＦＵＮＤ row)', async () => {
    const { code, stdout } = await cli(['demo']);
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    const wide = lines.find((l) => l.includes('ＲＥＦＵＮＤ'))!;
    const plain = lines.find((l) => l.startsWith('1 '))!;
    const column = (line: string, word: string) => stringWidth(line.slice(0, line.indexOf(word)));
    expect(column(wide, 'ALLOW')).toBe(column(plain, 'ALLOW'));
  });

  it('mcp-proxy --help prints to stdout as "toolgate mcp-proxy", with its exit codes', async () => {
    const { code, stdout, stderr } = await cli(['mcp-proxy', '--help']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^Usage: toolgate mcp-proxy \[options\] <command\.\.\.>/);
    expect(stdout).toContain('Exit codes:\n  0  clean shutdown');
    expect(stdout).not.toContain('toolgate-mcp-proxy');
  });
});
