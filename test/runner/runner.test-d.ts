import { expectTypeOf, test } from 'vitest';
import type {
  AgentRunner,
  ApprovalDecision,
  DenyDecision,
  PendingApproval,
  RunResult,
  RunState,
  ToolNotPermittedError,
} from '../../src/index.js';
import type { RunEventMap } from '../../src/runner/index.js';

test('RunResult narrows on status', () => {
  const result = {} as RunResult;
  if (result.status === 'paused') {
    expectTypeOf(result.state).toEqualTypeOf<RunState>();
    expectTypeOf(result.pending).toEqualTypeOf<readonly PendingApproval[]>();
  }
  if (result.status === 'failed') expectTypeOf(result.error).toEqualTypeOf<Error>();
  if (result.status === 'completed') {
    expectTypeOf(result.output).toEqualTypeOf<string>();
    expectTypeOf(result.error).toEqualTypeOf<undefined>();
  }
  if (result.status === 'refusal_loop') expectTypeOf(result.decision).toEqualTypeOf<DenyDecision>();
});

test('events are a closed, typed map', () => {
  expectTypeOf<RunEventMap['tool_refused']['error']>().toEqualTypeOf<ToolNotPermittedError | null>();
  expectTypeOf<AgentRunner['on']>().toBeFunction();
  expectTypeOf<ReturnType<AgentRunner['answer']>>().toEqualTypeOf<ApprovalDecision>();
  // @ts-expect-error not an event of the map
  expectTypeOf<RunEventMap['tool_executed']>().toBeObject();
});
