/**
 * The public surface, counted by the TypeScript compiler (types included): every subpath export of
 * package.json within its budget (issue 21: the root ≤ 45, `toolgate/gateway` ≤ 20, `toolgate/stores` and
 * `toolgate/runner` ≤ 30), every name the docs import from a subpath exported by it, the names DESIGN.md
 * pins kept, no name public before the split dropped — and one name, one meaning: no public name is
 * declared twice in the files dist/*.d.ts is built from (tsconfig.build.json's program).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as {
  exports: Record<string, string | { types?: string }>;
};
/** Every subpath with types, by its import name, and the source file its dist/*.d.ts is built from. */
const ENTRIES: Record<string, string> = Object.fromEntries(
  Object.entries(PACKAGE.exports).flatMap(([key, value]) =>
    typeof value === 'object' && value.types
      ? [
          [
            key === '.' ? 'toolgate' : `toolgate/${key.slice(2)}`,
            value.types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts'),
          ],
        ]
      : [],
  ),
);
type Entry = string;

const BUDGET: Record<string, number> = {
  toolgate: 45,
  'toolgate/gateway': 20,
  'toolgate/stores': 30,
  'toolgate/runner': 30,
};

const build = ts.getParsedCommandLineOfConfigFile(
  `${ROOT}tsconfig.build.json`,
  {},
  {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  },
)!;
const program = ts.createProgram(
  Object.values(ENTRIES).map((f) => ROOT + f),
  { ...build.options, noEmit: true },
);
const checker = program.getTypeChecker();

/** Each subpath's exported names, and the declaration each resolves to (aliases followed). */
const resolved = ((): Record<Entry, ReadonlyMap<string, readonly ts.Declaration[]>> => {
  const out: Record<Entry, Map<string, readonly ts.Declaration[]>> = {};
  for (const [entry, file] of Object.entries(ENTRIES)) {
    const source = program.getSourceFile(ROOT + file);
    if (!source) throw new Error(`${entry}: ${file} is not in the program`);
    const module = checker.getSymbolAtLocation(source)!;
    const names = new Map<string, readonly ts.Declaration[]>();
    for (const s of checker.getExportsOfModule(module)) {
      const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
      names.set(s.name, target.declarations ?? []);
    }
    out[entry] = names;
  }
  return out;
})();

const exported: Record<Entry, readonly string[]> = Object.fromEntries(
  Object.entries(resolved).map(([entry, names]) => [entry, [...names.keys()].sort()]),
);

/** The names the docs import from each subpath (`import { … } from 'toolgate/…'` in docs/, README, examples). */
function documented(): Map<string, Set<string>> {
  const files = [
    'README.md',
    ...readdirSync(`${ROOT}docs`, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const out = new Map<string, Set<string>>();
  for (const file of files) {
    const text = readFileSync(ROOT + file, 'utf8');
    for (const m of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+['"](toolgate(?:\/[a-z-]+)?)['"]/g)) {
      const set = out.get(m[2]!) ?? new Set<string>();
      for (const part of m[1]!.split(',')) {
        const name = part
          .trim()
          .replace(/^type\s+/, '')
          .split(/\s+as\s+/)[0]!
          .trim();
        if (name) set.add(name);
      }
      out.set(m[2]!, set);
    }
  }
  return out;
}

/** The names DESIGN.md pins (values and types) and the runner's front door the issue keeps at the root. */
const PINNED = [
  'canonical',
  'ToolAllowlist',
  'ToolDecision',
  'ToolNotPermittedError',
  'ConfigurationError',
  'ToolgateError',
  'ToolAllowlistGuard',
  'PermissionResult',
  'ToolTag',
  'PermissionRule',
  'PermissionPolicy',
  'PermissionHandler',
  'PermissionRequest',
  'ALLOW_READONLY',
  'ASK_DESTRUCTIVE',
  'DENY_PRIVILEGED',
  'ASK_NETWORK',
  'ASK_FILE_SYSTEM',
  'defineTool',
  'ToolRegistry',
  'AgentRunner',
  'Agent',
  'RunResult',
  'RunState',
  'PendingApproval',
  'ApprovalDecision',
];

/** The root entry's 111 names before the split (toolgate 0.1). */
const BEFORE = `canonical skeleton findConfusables CONFUSABLES_VERSION ConfusablesMode ConfusablePair ToolgateError
ConfigurationError ToolNotPermittedError RunStateError ErrorCode isToolgateError RefusalLayer ToolAllowlist
ToolAllowlistGuard AllowlistLayer ToolAllowlistOptions ToolAllowlistGuardOptions ToolDecision PermissionResult
PermissionPolicy ALLOW_READONLY ASK_DESTRUCTIVE DENY_PRIVILEGED ASK_NETWORK ASK_FILE_SYSTEM PermissionRule
PermissionPolicyOptions PolicyEvaluation RuleTrace PermissionHandler PermissionRequest HandlerAnswer defineTool ToolTag
Tool ToolDefinition ToolMetadata ToolMetadataInput ToolExecution ToolLocality StandardSchemaV1 JsonSchema
ToolParameters ToolRegistry ToolRegistryOptions ToolResult ToolCallResult RegistryEvent GateContext AgentIdentity
Decision AllowDecision DenyDecision DenyStage DecisionBase CallFormat SchemaFormat ToolCallInput ToolgateCall
OpenAIChatToolCall OpenAIResponsesFunctionCall AnthropicToolUse GeminiFunctionCallPart ShapedToolResult
OpenAIChatToolResult OpenAIResponsesFunctionCallOutput AnthropicToolResult GeminiFunctionResponsePart ToolSchema
AgentRunner AgentRunnerOptions ScriptedModel ScriptTurn ScriptedModelOptions InMemoryApprovalStore ApprovalStore
RememberedAnswer LedgerEntry LedgerOutcome Agent AgentSpec TenantLimits TenantProvider Model ModelRequest
ModelResponse ModelTool RunCaller RunOptions ResumeOptions RunMessage RunToolCall ToolMessage RunResult
RunResultBase RunStatus RunTally BudgetCap RunState FrameState TurnState PendingApproval ApprovalDecision
ApprovalScope ApprovalAnswer ApprovalHandler RunEvent RunEventBase RunEventMap RunEventType`.split(/\s+/);

describe('the public surface', () => {
  it('the root entry has at most 45 names, the pinned ones among them', () => {
    expect(exported['toolgate']!.length).toBeLessThanOrEqual(45);
    expect(exported['toolgate']).toEqual(expect.arrayContaining(PINNED));
  });

  it.each(Object.entries(BUDGET))('%s has at most %i names', (entry, budget) => {
    expect(exported[entry], `${entry} is a subpath of package.json`).toBeDefined();
    expect(exported[entry]!.length, exported[entry]!.join(' ')).toBeLessThanOrEqual(budget);
  });

  it('every subpath of package.json is counted here', () => {
    expect(Object.keys(exported)).toEqual(
      expect.arrayContaining(['toolgate', 'toolgate/gateway', 'toolgate/stores', 'toolgate/runner', 'toolgate/policy']),
    );
    for (const [entry, names] of Object.entries(exported)) expect(names.length, entry).toBeGreaterThan(0);
  });

  it('every name the docs import from a subpath is exported by it', () => {
    const docs = documented();
    expect(docs.get('toolgate/stores')).toEqual(expect.any(Set));
    const missing = [...docs].flatMap(([entry, names]) =>
      [...names].filter((n) => !exported[entry]?.includes(n)).map((n) => `${entry}: ${n}`),
    );
    expect(missing).toEqual([]);
    // Named in docs/gateway.md and docs/deploy.md's prose and examples, not only in imports.
    expect(exported['toolgate/gateway']).toEqual(
      expect.arrayContaining(['createGateway', 'gatewayInbox', 'serveGatewayHttp', 'jwtAuthenticator']),
    );
  });

  it("the gateway's entry holds what a gateway is composed with, not its internals", () => {
    for (const internal of [
      'PinStore',
      'readLockFile',
      'definitionDiff',
      'pinnedDefinition',
      'Upstream',
      'UpstreamState',
      'ToolAuditRecord',
      'GatewayRequestContext',
      'normalResourceUri',
    ])
      expect(exported['toolgate/gateway'], internal).not.toContain(internal);
    // The URI normal form moved beside the rules it serves.
    expect(exported['toolgate/policy']).toContain('normalResourceUri');
  });

  it('wire formats live in toolgate/formats and runner internals in toolgate/runner or toolgate/types, not at the root', () => {
    expect(exported['toolgate/formats']).toEqual(
      expect.arrayContaining(['ToolCallInput', 'OpenAIChatToolCall', 'AnthropicToolUse', 'ToolSchema']),
    );
    expect(exported['toolgate/runner']).toEqual(
      expect.arrayContaining(['ScriptedModel', 'RunEvent', 'InMemoryApprovalStore']),
    );
    expect(exported['toolgate/types']).toEqual(expect.arrayContaining(['FrameState', 'RunEventBase', 'LedgerQuery']));
    expect(exported['toolgate/stores']).toContain('ApprovalStore');
    for (const name of ['ToolCallInput', 'ScriptedModel', 'RunEvent', 'FrameState', 'InMemoryApprovalStore'])
      expect(exported['toolgate'], name).not.toContain(name);
  });

  it('one name, one meaning: a name exported by two subpaths is the same declaration', () => {
    const meanings = new Map<string, Map<string, string[]>>();
    for (const [entry, names] of Object.entries(resolved))
      for (const [name, declarations] of names) {
        const where = declarations
          .map((d) => `${d.getSourceFile().fileName.slice(ROOT.length)}:${d.getStart()}`)
          .sort()
          .join(',');
        const byWhere = meanings.get(name) ?? new Map<string, string[]>();
        byWhere.set(where, [...(byWhere.get(where) ?? []), entry]);
        meanings.set(name, byWhere);
      }
    const twice = [...meanings]
      .filter(([, byWhere]) => byWhere.size > 1)
      .map(([name, byWhere]) => `${name}: ${[...byWhere].map(([w, e]) => `${e.join('+')} → ${w}`).join(' | ')}`);
    expect(twice).toEqual([]);
  });

  it('one name, one meaning in dist/: no public name is declared in two of the files dist/*.d.ts is built from', () => {
    // Each exported declaration of a source file is one of its .d.ts (tsc's declaration emit, as `npm run
    // build` runs it, keeps them one to one), so the source files' exported declarations are dist's; read
    // from the program, not emitted (an emit of the whole source takes a minute).
    const declared = new Map<string, string[]>();
    for (const source of program.getSourceFiles()) {
      const file = source.fileName;
      if (!file.startsWith(`${ROOT}src/`) || file.endsWith('.d.ts')) continue;
      for (const statement of source.statements) {
        const exportedHere =
          ts.getCombinedModifierFlags(statement as unknown as ts.Declaration) & ts.ModifierFlags.Export;
        if (!exportedHere) continue;
        const names = ts.isVariableStatement(statement)
          ? statement.declarationList.declarations.flatMap((d) => (ts.isIdentifier(d.name) ? [d.name.text] : []))
          : 'name' in statement && statement.name && ts.isIdentifier(statement.name as ts.Node)
            ? [(statement.name as ts.Identifier).text]
            : [];
        for (const name of names) {
          const files = declared.get(name) ?? [];
          if (!files.includes(file)) files.push(file);
          declared.set(name, files);
        }
      }
    }
    const publicNames = new Set(Object.values(exported).flat());
    const twice = [...declared]
      .filter(([name, files]) => publicNames.has(name) && files.length > 1)
      .map(([name, files]) => `${name}: ${files.map((f) => f.slice(ROOT.length)).join(', ')}`);
    expect(twice).toEqual([]);
    // The approval and store names of issue 21, each declared once (checked in a built dist/ too: each one
    // `interface`/`type` line in exactly one .d.ts).
    for (const name of [
      'ApprovalStore',
      'RememberedAnswer',
      'LedgerEntry',
      'LedgerOutcome',
      'ApprovalRequest',
      'ApprovalRecord',
      'ApprovalBinding',
      'ApprovalKind',
      'ApprovalOwner',
      'ApprovalSettings',
      'PendingApproval',
      'ApprovalDecision',
      'ApprovalScope',
      'RememberScope',
      'Answer',
      'SignedAnswer',
      'NonceStore',
      'RememberStore',
      'Ledger',
      'TallyStore',
      'CounterStore',
      'Stores',
    ])
      expect(declared.get(name), name).toHaveLength(1);
  });

  it('drops no name: every name the root exported before is exported by the root or a subpath', () => {
    const everywhere = new Set(Object.values(exported).flat());
    expect(BEFORE).toHaveLength(111);
    expect(BEFORE.filter((name) => !everywhere.has(name))).toEqual([]);
  });
});
