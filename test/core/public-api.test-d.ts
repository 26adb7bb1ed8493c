import { describe, expectTypeOf, it } from 'vitest';
import type { PermissionResult, ToolAllowlist } from '../../src/index.js';
import {
  ToolTag,
  type Decision,
  type PermissionHandler,
  type PermissionRequest,
  type ToolDecision,
  type ToolResult,
} from '../../src/index.js';

describe('public types', () => {
  it('has literal unions for results and tags', () => {
    expectTypeOf<PermissionResult>().toEqualTypeOf<'allow' | 'deny' | 'ask'>();
    expectTypeOf(ToolTag.READ_ONLY).toEqualTypeOf<'read_only'>();
  });

  it('narrows decisions by effect and stage', () => {
    const d = {} as Decision;
    if (d.effect === 'deny' && d.stage === 'allowlist')
      expectTypeOf(d.layer).toEqualTypeOf<'not_declared' | 'tenant' | 'caller'>();
    if (d.effect === 'allow') expectTypeOf(d.layer).toEqualTypeOf<null>();
    const td = {} as ToolDecision;
    if (td.permitted) expectTypeOf(td.reason).toEqualTypeOf<null>();
    else expectTypeOf(td.reason).toEqualTypeOf<'not_declared' | 'tenant' | 'caller'>();
  });

  it('accepts handlers as functions or objects, sync or async', () => {
    expectTypeOf((_r: PermissionRequest) => 'allow' as const).toMatchTypeOf<PermissionHandler>();
    expectTypeOf({ handle: async (_r: PermissionRequest) => 'deny' as const }).toMatchTypeOf<PermissionHandler>();
    expectTypeOf<ReturnType<ToolAllowlist['decide']>>().toEqualTypeOf<ToolDecision>();
    expectTypeOf<ToolResult['status']>().toEqualTypeOf<'ok' | 'error' | 'refused'>();
  });
});
