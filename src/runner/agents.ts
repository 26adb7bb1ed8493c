/**
 * Agents as the runner keeps them: a graph of plain specs by name (so a cycle of peers serialises), and the
 * `agent:<name>` tools that make a peer callable through the gate like any other tool.
 */
import { ToolAllowlist } from '../allowlist.js';
import { ConfigurationError } from '../errors.js';
import { canonical, describe } from '../names.js';
import { defineTool, type Tool } from '../tool.js';
import type { Agent, AgentSpec } from './types.js';

/** The tool name a peer is called by. */
export function peerToolName(agent: string): string {
  return `agent:${agent}`;
}

/** The JSON Schema of a delegation call's arguments. */
const DELEGATION_PARAMETERS = {
  type: 'object',
  properties: { input: { type: 'string', description: 'What the peer agent is asked to do' } },
  required: ['input'],
  additionalProperties: false,
} as const;

/**
 * Normalises an agent and every agent reachable through its peers into specs by name. Two different
 * agents with one name, a malformed field or a declaration with colliding names is a ConfigurationError.
 */
export function agentGraph(root: Agent): Record<string, AgentSpec> {
  const graph: Record<string, AgentSpec> = {};
  const seen = new Map<string, Agent>();
  const queue: Agent[] = [root];
  while (queue.length > 0) {
    const agent = queue.shift()!;
    if (typeof agent !== 'object' || agent === null)
      throw new TypeError(`an agent must be an object, got ${describe(agent)}`);
    if (typeof agent.name !== 'string' || agent.name.trim() === '')
      throw new TypeError(`agent "name" must be a non-empty string, got ${describe(agent.name)}`);
    const known = seen.get(agent.name);
    if (known === agent) continue;
    if (known)
      throw new ConfigurationError(
        `two different agents are named ${JSON.stringify(agent.name)}; agent names identify peers and must be unique in a run`,
      );
    seen.set(agent.name, agent);
    const where = `agent ${JSON.stringify(agent.name)}`;
    if (
      agent.tools === null ||
      typeof agent.tools !== 'object' ||
      typeof (agent.tools as Iterable<string>)[Symbol.iterator] !== 'function' ||
      typeof agent.tools === 'string'
    ) {
      throw new TypeError(`${where}: "tools" must be an iterable of tool names, got ${describe(agent.tools)}`);
    }
    const tools = [...agent.tools];
    const last = specs.get(agent);
    // Resolving once here turns a colliding or malformed declaration into an error before the run starts; a
    // declaration the same as this agent's last one was resolved then, and its spec (the same frozen arrays,
    // which the gate's allowlist memo knows) is taken again.
    const same = last !== undefined && sameStrings(last.tools, tools);
    if (!same) ToolAllowlist.resolve(tools, { agent: agent.name });
    const peers = agent.peers ?? [];
    if (!Array.isArray(peers))
      throw new TypeError(`${where}: "peers" must be an array of agents, got ${describe(peers)}`);
    const peerForms = new Set<string>();
    for (const peer of peers) {
      const form = canonical(peerToolName(typeof peer?.name === 'string' ? peer.name : ''));
      if (peerForms.has(form)) throw new ConfigurationError(`${where}: two peers are called ${JSON.stringify(form)}`);
      peerForms.add(form);
      queue.push(peer);
    }
    for (const field of ['instructions', 'description'] as const) {
      if (agent[field] !== undefined && typeof agent[field] !== 'string')
        throw new TypeError(`${where}: "${field}" must be a string, got ${describe(agent[field])}`);
    }
    const instructions = agent.instructions ?? null;
    const description = agent.description ?? null;
    if (
      same &&
      last.name === agent.name &&
      last.instructions === instructions &&
      last.description === description &&
      last.peers.length === peers.length &&
      peers.every((p, i) => p.name === last.peers[i])
    ) {
      graph[agent.name] = last;
      continue;
    }
    const spec: AgentSpec = Object.freeze({
      name: agent.name,
      tools: Object.freeze(tools),
      peers: Object.freeze(peers.map((p) => p.name)),
      instructions,
      description,
    });
    specs.set(agent, spec);
    graph[agent.name] = spec;
  }
  return graph;
}
/** The last spec made of each agent object (its fields may change between runs: each run compares). */
const specs = new WeakMap<Agent, AgentSpec>();

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The `agent:<name>` tools of one agent's peers, by canonical name. Never executed directly: the runner runs the peer. */
export function peerTools(graph: Readonly<Record<string, AgentSpec>>, agent: string): Map<string, Tool> {
  const tools = new Map<string, Tool>();
  for (const name of graph[agent]?.peers ?? []) {
    const spec = graph[name];
    const tool = defineTool({
      name: peerToolName(name),
      description: spec?.description ?? `Delegate a task to the agent ${JSON.stringify(name)} and get its answer`,
      parameters: DELEGATION_PARAMETERS,
      metadata: { customTags: ['agent'], concurrencySafe: false },
      execute: () => {
        throw new Error('a peer agent runs through the runner, not as a function');
      },
    });
    tools.set(tool.canonicalName, tool);
  }
  return tools;
}
