/**
 * The public surface, counted by the TypeScript compiler (types included): the root entry stays readable
 * in one screen, keeps every name DESIGN.md pins, and no name public before the split was dropped — each
 * is exported by the root or by the subpath it moved to.
 */
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRIES = {
  toolgate: 'src/index.ts',
  'toolgate/runner': 'src/runner/index.ts',
  'toolgate/formats': 'src/formats/entry.ts',
  'toolgate/types': 'src/types.ts',
  'toolgate/policy': 'src/policy-file/index.ts',
} as const;
type Entry = keyof typeof ENTRIES;

const exported = ((): Record<Entry, readonly string[]> => {
  const files = Object.values(ENTRIES).map((f) => ROOT + f);
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const out = {} as Record<Entry, readonly string[]>;
  for (const [entry, file] of Object.entries(ENTRIES) as [Entry, string][]) {
    const module = checker.getSymbolAtLocation(program.getSourceFile(ROOT + file)!)!;
    out[entry] = checker
      .getExportsOfModule(module)
      .map((s) => s.name)
      .sort();
  }
  return out;
})();

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
    expect(exported.toolgate.length).toBeLessThanOrEqual(45);
    expect(exported.toolgate).toEqual(expect.arrayContaining(PINNED));
  });

  it('wire formats live in toolgate/formats and runner internals in toolgate/runner, not at the root', () => {
    expect(exported['toolgate/formats']).toEqual(
      expect.arrayContaining(['ToolCallInput', 'OpenAIChatToolCall', 'AnthropicToolUse', 'ToolSchema']),
    );
    expect(exported['toolgate/runner']).toEqual(
      expect.arrayContaining(['ScriptedModel', 'RunEvent', 'FrameState', 'InMemoryApprovalStore', 'ApprovalStore']),
    );
    for (const name of ['ToolCallInput', 'ScriptedModel', 'RunEvent', 'FrameState', 'InMemoryApprovalStore'])
      expect(exported.toolgate, name).not.toContain(name);
  });

  it('drops no name: every name the root exported before is exported by the root or a subpath', () => {
    const everywhere = new Set(Object.values(exported).flat());
    expect(BEFORE).toHaveLength(111);
    expect(BEFORE.filter((name) => !everywhere.has(name))).toEqual([]);
  });
});
