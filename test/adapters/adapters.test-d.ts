import type { FunctionTool, MCPToolFilterCallable, ToolErrorFormatter } from '@openai/agents';
import type { ToolApprovalStatus, ToolSet } from 'ai';
import { describe, expectTypeOf, it } from 'vitest';
import { createAiSdkTools } from '../../src/adapters/ai-sdk/index.js';
import {
  connectMcpServer,
  createMcpProxy,
  loadPolicyForProxy,
  type McpAuditRecord,
  type McpConnection,
  type McpProxy,
} from '../../src/adapters/mcp/index.js';
import { createAgentTools, mcpToolFilter } from '../../src/adapters/openai-agents/index.js';
import type { Decision, ToolRegistry } from '../../src/index.js';

declare const registry: ToolRegistry;

describe('adapter public types', () => {
  it('ai-sdk: a tool set and a generic approval function', () => {
    const gated = createAiSdkTools(registry);
    expectTypeOf(gated.tools).toEqualTypeOf<ToolSet>();
    expectTypeOf(gated.toolApproval).returns.toEqualTypeOf<Promise<ToolApprovalStatus>>();
  });

  it('openai-agents: SDK function tools typed by the run context', () => {
    const gated = createAgentTools<{ tenant: string }>(registry, {
      context: (rc) => ({ tenant: { id: rc.context.tenant } }),
    });
    expectTypeOf(gated.tools).toEqualTypeOf<FunctionTool<{ tenant: string }>[]>();
    expectTypeOf(gated.toolErrorFormatter).toEqualTypeOf<ToolErrorFormatter>();
    expectTypeOf(mcpToolFilter(registry)).toEqualTypeOf<MCPToolFilterCallable<unknown>>();
  });

  it('mcp: connections, the gateway and its audit records', () => {
    expectTypeOf(connectMcpServer).returns.toEqualTypeOf<Promise<McpConnection>>();
    expectTypeOf(createMcpProxy).returns.toEqualTypeOf<Promise<McpProxy>>();
    expectTypeOf<McpAuditRecord['decision']>().toEqualTypeOf<Decision>();
    expectTypeOf(loadPolicyForProxy).parameter(0).toEqualTypeOf<string>();
  });

  it('a Decision can say an adapter asked', () => {
    expectTypeOf<'adapter'>().toMatchTypeOf<Decision['asked']>();
  });
});
