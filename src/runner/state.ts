/**
 * A paused run as plain JSON, and back: the stack of frames, the agent graph, tenant, caller, session, the
 * tally and refusal counts, the decisions so far and the pending approvals, signed with the runner's
 * secret (an HMAC over the canonical JSON), so an edited state (a lowered tally, a widened scope) is refused.
 * On resume the caller's scopes and the agents' declarations can only narrow.
 */
import { RunStateError } from '../errors.js';
import { canonical, describe } from '../names.js';
import { agentGraph } from './agents.js';
import { stringList } from '../config.js';
import { newTurn, type Run } from './run.js';
import { macOf, sameMac } from '../crypto.js';
import { parseJsonText } from '../json-text.js';
import type { AgentSpec, FrameState, ResumeOptions, RunState } from './types.js';

const VERSION = 3;

/** The run as a signed RunState. */
export function snapshot(run: Run, secret: Uint8Array): RunState {
  const frames: FrameState[] = run.frames.map((f) => ({
    agent: f.agent,
    key: f.key,
    depth: f.depth,
    messages: f.messages,
    turn: f.turn && {
      index: f.turn.index,
      calls: f.turn.calls,
      done: Object.fromEntries(f.turn.done),
      active: f.turn.active,
    },
    granted: Object.fromEntries(f.granted),
  }));
  const body = {
    kind: 'toolgate.run-state' as const,
    version: VERSION,
    runId: run.runId,
    root: run.root,
    agents: run.agents,
    tenant: run.tenant,
    caller: run.caller,
    session: run.session,
    input: run.input,
    tally: { ...run.tally },
    loops: Object.fromEntries(run.loops),
    decisions: run.decisions,
    frames,
    pending: run.pending,
  };
  // Signed as JSON will carry it, so a state that went through JSON.stringify/parse verifies (read back with the
  // keys as written: a call's arguments may hold escaped keys, src/json-text.ts).
  const plain = parseJsonText(JSON.stringify(body)) as Omit<RunState, 'mac'>;
  return { ...plain, mac: macOf(secret, ['toolgate.state', plain]) };
}

/** A live run from a signed RunState, narrowed by what resume() was given; a state that does not verify throws. */
export function restore(state: RunState, options: ResumeOptions, secret: Uint8Array): Run {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`resume(): options must be an object, got ${describe(options)}`);
  if (typeof state !== 'object' || state === null || state.kind !== 'toolgate.run-state')
    throw new RunStateError(`resume() expects a RunState, got ${describe(state)}`);
  if (state.version !== VERSION)
    throw new RunStateError(`RunState version ${describe(state.version)} is not supported (expected ${VERSION})`);
  const { mac, ...body } = state;
  let expected: string;
  try {
    expected = macOf(secret, ['toolgate.state', body]);
  } catch (cause) {
    throw new RunStateError('the RunState is not plain JSON', { cause });
  }
  if (!sameMac(mac, expected))
    throw new RunStateError('the RunState was altered or signed with another secret; nothing was resumed');
  const copy = structuredClone(body);
  return {
    runId: copy.runId,
    root: copy.root,
    agents: narrowAgents(copy.root, copy.agents, options.agent),
    tenant: copy.tenant,
    caller: narrowCaller(copy.caller, options.caller),
    session: copy.session,
    input: copy.input,
    signal: options.signal,
    tally: { ...copy.tally },
    loops: new Map(Object.entries(copy.loops)),
    decisions: [...copy.decisions],
    frames: copy.frames.map((f) => ({
      agent: f.agent,
      key: f.key,
      depth: f.depth,
      messages: [...f.messages],
      turns: f.messages.reduce((n, m) => (m.role === 'assistant' ? n + 1 : n), 0),
      turn: f.turn && {
        ...newTurn(f.turn.index, f.turn.calls),
        done: new Map(Object.entries(f.turn.done)),
        active: f.turn.active,
      },
      granted: new Map(Object.entries(f.granted)),
      view: null,
      ledgerHead: null,
    })),
    pending: [],
    peerTools: new Map(),
    keys: { tally: null, scope: null },
  };
}

/**
 * The caller on resume: the state's caller with its scopes intersected with the scopes given now, compared
 * in canonical form (`Files:Read` given now keeps `files:read` of the state). A resume only narrows: scopes
 * the state lacked are not added, and a state that stated no scopes takes the ones given. A different
 * caller id is refused.
 */
function narrowCaller(saved: RunState['caller'], given: ResumeOptions['caller']): RunState['caller'] {
  if (given === undefined) return saved;
  if (typeof given !== 'object' || given === null)
    throw new TypeError(`resume() option "caller" must be an object, got ${describe(given)}`);
  if (given.id !== undefined) {
    if (typeof given.id !== 'string')
      throw new TypeError(`resume() option "caller.id" must be a string, got ${describe(given.id)}`);
    if (given.id !== saved.id)
      throw new RunStateError(
        `resume() option "caller.id" is ${JSON.stringify(given.id)}, but the run's caller is ${JSON.stringify(saved.id)}; nothing was resumed`,
      );
  }
  if (given.scopes === undefined || given.scopes === null) return saved;
  const now = stringList(given.scopes, 'caller.scopes');
  if (saved.scopes === null) return { id: saved.id, scopes: now };
  const kept = new Set(now.map((scope) => canonical(scope)));
  return { id: saved.id, scopes: saved.scopes.filter((scope) => kept.has(canonical(scope))) };
}

/**
 * The agents on resume: each declaration in the state intersected with the one given now (tools by
 * canonical form, peers by name). An agent of the state missing from the given graph declares nothing.
 */
function narrowAgents(root: string, saved: RunState['agents'], given: ResumeOptions['agent']): RunState['agents'] {
  if (given === undefined) return saved;
  const now = agentGraph(given);
  if (given.name !== root)
    throw new RunStateError(
      `resume() option "agent" is ${JSON.stringify(given.name)}, but the run's root agent is ${JSON.stringify(root)}; nothing was resumed`,
    );
  const narrowed: Record<string, AgentSpec> = {};
  for (const [name, spec] of Object.entries(saved)) {
    const current = now[name];
    const tools = new Set((current?.tools ?? []).map((tool) => canonical(tool)));
    const peers = new Set(current?.peers ?? []);
    narrowed[name] = Object.freeze({
      ...spec,
      tools: Object.freeze(spec.tools.filter((tool) => tools.has(canonical(tool)))),
      peers: Object.freeze(spec.peers.filter((peer) => peers.has(peer))),
    });
  }
  return narrowed;
}
