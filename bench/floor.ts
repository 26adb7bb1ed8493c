/**
 * The floor of issue 25: the gate one writes by hand for the README's shape, with no library. Per call a
 * Map find (the tool), three Set look-ups (the agent's tools, the tenant's plan, the caller's scopes — Sets
 * the server built once from its plain arrays), a rule look-up (a Map by tool name), the awaited tool and a
 * result object. No canonical names, no argument snapshot or schema, no events, no timeout: what toolgate's
 * `invoke` is measured beside in the same process (bench/quickstart.ts), never a replacement for it.
 */

export interface FloorResult {
  readonly callId: string;
  readonly tool: string;
  readonly status: 'ok' | 'refused';
  readonly content: unknown;
  readonly rule: string | null;
}

export interface FloorRule {
  readonly name: string;
  readonly effect: 'allow' | 'deny';
}

export interface FloorGate {
  invoke(id: string, name: string, args: Readonly<Record<string, unknown>>): Promise<FloorResult>;
}

export function floorGate(
  tools: ReadonlyMap<string, (args: Readonly<Record<string, unknown>>) => unknown>,
  layers: { readonly agent: readonly string[]; readonly tenant: readonly string[]; readonly caller: readonly string[] },
  rules: ReadonlyMap<string, FloorRule>,
): FloorGate {
  const agent = new Set(layers.agent);
  const tenant = new Set(layers.tenant);
  const caller = new Set(layers.caller);
  return {
    async invoke(id, name, args) {
      const execute = tools.get(name);
      if (!execute || !agent.has(name) || !tenant.has(name) || !caller.has(name))
        return { callId: id, tool: name, status: 'refused', content: 'not permitted', rule: null };
      const rule = rules.get(name);
      if (!rule || rule.effect !== 'allow')
        return { callId: id, tool: name, status: 'refused', content: 'denied', rule: rule?.name ?? null };
      const content = await execute(args);
      return { callId: id, tool: name, status: 'ok', content, rule: rule.name };
    },
  };
}
