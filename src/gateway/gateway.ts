/**
 * The MCP gateway: many upstream servers behind one MCP server per client connection. Tools pass the
 * gate (allowlists, the policy on validated arguments, approvals by elicitation); resources and prompts
 * pass the policy file's `resources:`/`prompts:` rules; tool definitions are pinned; shadow rules are
 * recorded. Everything else a client or an upstream sends is forwarded (completion, logging, progress,
 * cancellation, resource subscriptions, sampling, elicitation) or refused with an error that says so.
 */
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Client } from '@modelcontextprotocol/client';
import type { RequestHandlerExtra, RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type LoggingLevel,
  type Prompt,
  type Resource,
  type ResourceTemplate,
  type ServerNotification,
  type ServerRequest,
  type Tool as McpTool,
} from '@modelcontextprotocol/sdk/types.js';
import { ConfigurationError } from '../errors.js';
import { readCall } from '../formats/index.js';
import type { AskOutcome } from '../gate/approval.js';
import { dispatchCalls } from '../gate/dispatch.js';
import { environmentOf } from '../gate/environment.js';
import type { GateContext } from '../gate/precheck.js';
import type { Route } from '../gate/route.js';
import { canonical, describe, displaySafe, namespaceOf } from '../names.js';
import type { PermissionHandler, PermissionRequest } from '../permissions/handler.js';
import { PermissionPolicy } from '../permissions/policy.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import { formatIssue, readPolicyFile } from '../policy-file/load.js';
import { ToolRegistry, type ToolResult } from '../registry.js';
import { canonicalJson } from '../runner/signing.js';
import type { Tool } from '../tool.js';
import { checkContext } from './context.js';
import type { GatewayAuditRecord, GatewayAuditSink, ShadowRecord, ToolAuditRecord } from './audit.js';
import { checkApprovals, storeApprover, type ApprovalNote, type GatewayApprovals } from './approvals.js';
import { sessionSubject } from './auth.js';
import { compileGovernance, normalResourceUri, type ItemPolicy, type ItemVerdict } from './governance.js';
import { checkInbox, inboxRoute, type GatewayInbox } from './inbox.js';
import { PIN_RULE, pinnedDefinition, PinStore, readLockFile, withPinRule } from './pins.js';
import { callScope, Upstream, type CallScope, type GatewayUpstreamOptions, type UpstreamEvents } from './upstream.js';

/** The context of one downstream request: fixed, or derived from the request's authentication. */
export type GatewayRequestContext =
  | GateContext
  | ((request: { readonly authInfo: AuthInfo | undefined; readonly sessionId: string | undefined }) => GateContext);

/** Pinning of tool definitions. */
export interface GatewayPinOptions {
  /** The lock file (created when missing). */
  readonly file: string;
  /** What a drifted tool gets: refused (hidden from tools/list), or asked for per call. @default 'refuse' */
  readonly onDrift?: 'refuse' | 'ask';
}

/** Options of {@link Gateway.reload}. */
export interface GatewayReloadOptions {
  /**
   * The gateway's context under the new policy, or a function of the new policy file that makes it (a
   * throw refuses the reload). @default the option given at start, else the new policy's default context
   */
  readonly context?: GateContext | ((policy: PolicySet) => GateContext);
  /** Pinning under the new policy (e.g. `(p) => gatewayConfigOf(p).pins`); a throw refuses the reload. @default unchanged */
  readonly pins?: GatewayPinOptions | null | ((policy: PolicySet) => GatewayPinOptions | null);
}

/** What a reload did: the changes now in force, or why the policy in force was kept. */
export type GatewayReloadResult =
  | { readonly ok: true; readonly version: string; readonly changes: readonly string[] }
  | { readonly ok: false; readonly version: string; readonly error: string };

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** The upstream servers by namespace (`github` shows `search` as `github:search`). */
  readonly upstreams: Readonly<Record<string, GatewayUpstreamOptions>>;
  /** The loaded policy file: tool rules, resource and prompt rules, agents, tenants, scopes, shadow mode. */
  readonly policy: PolicySet;
  /** Who is asking, for servers created without their own context (over HTTP, the token narrows it). @default the policy file's default context */
  readonly context?: GateContext;
  /** Pin tool definitions in a lock file; null turns pinning off. @default null */
  readonly pins?: GatewayPinOptions | null;
  /** Receives every audit record. @default none */
  readonly audit?: GatewayAuditSink;
  /** How long a person has to answer an approval (elicitation) before the call is denied. @default 120_000 */
  readonly approvalTimeoutMs?: number;
  /** The gateway's server name towards its clients. @default 'toolgate-gateway' */
  readonly name?: string;
  /**
   * Put asks in the shared stores instead of asking by elicitation: a call asked on one replica can be
   * answered on another and runs once (see approvals.ts). @default none: asks go to the client by elicitation
   */
  readonly approvals?: GatewayApprovals;
  /**
   * Put asks in the approval inbox and wait for a person's answer there (`gatewayInbox(createInbox(…))`):
   * the client is told where (URL elicitation, else progress); the call runs once on allow. Not with
   * `approvals`. @default none
   */
  readonly inbox?: GatewayInbox;
}

/** A downstream server and what the gateway tracks for it. */
interface Downstream {
  readonly server: Server;
  logging: boolean;
}

/** A running gateway. */
export interface Gateway {
  /** The registry holding every upstream's tools (namespaced), with the policy in force. */
  readonly registry: ToolRegistry;
  /** The gateway's own context (agent, tenant, caller layers); a server's context function only narrows it over HTTP. */
  readonly context: GateContext;
  /** The policy file in force (the last one {@link Gateway.reload} swapped in, else the one it started with). */
  readonly policy: PolicySet;
  /**
   * Swaps in a new policy file, atomically: its tool, resource and prompt rules, shadow rules, agents and
   * the gateway's context take effect for every call decided from now on (a call waiting for a person is
   * decided again before it runs). A policy that does not load or compile keeps the one in force and is
   * reported (`{ ok: false }`, an audit `mode` record with event `refused`); every change of enforcement
   * is an audit `mode` record naming it. Upstreams and tool metadata take effect at the next start (the
   * record says so when they changed). `policy` is a loaded PolicySet or a policy file to read.
   */
  reload(policy: PolicySet | string, options?: GatewayReloadOptions): Promise<GatewayReloadResult>;
  /** The upstreams by namespace: their state (`ready`, `down` with a reason) and connection. */
  readonly upstreams: ReadonlyMap<string, Upstream>;
  /** A new downstream MCP server (one per client connection or HTTP session); connect it to a transport. */
  createServer(options?: { readonly context?: GatewayRequestContext }): Server;
  /** Subscribes to upstream state changes; returns the unsubscribe function. */
  onUpstreamState(listener: (upstream: Upstream) => void): () => void;
  /** Closes every downstream server and every upstream (stdio upstreams are stopped). */
  close(): Promise<void>;
}

const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const MAX_LISTED = 10_000;

/**
 * Starts a gateway: connects every upstream (one that fails is `down` and retried; the others serve),
 * registers their tools under their namespaces, pins their definitions when `pins` is given.
 *
 * @example
 * const set = await loadPolicyFile('policy.yaml');
 * const gateway = await createGateway({
 *   policy: set,
 *   upstreams: { fs: { stdio: { command: 'mcp-server-filesystem', args: ['/srv'] } } },
 *   pins: { file: 'policy.lock.json' },
 * });
 * await gateway.createServer().connect(new StdioServerTransport());
 */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`createGateway options must be an object, got ${describe(options)}`);
  let set = options.policy;
  if (!isPolicySet(set))
    throw new TypeError(`option "policy" must be a loaded policy file (a PolicySet), got ${describe(set)}`);
  if (typeof options.upstreams !== 'object' || options.upstreams === null)
    throw new TypeError(`option "upstreams" must be an object keyed by namespace, got ${describe(options.upstreams)}`);
  for (const [namespace, upstream] of Object.entries(options.upstreams)) {
    if (!NAMESPACE.test(namespace))
      throw new TypeError(
        `upstream namespace ${JSON.stringify(namespace)} must be 1-64 letters, digits, "_", "." or "-" (no ":")`,
      );
    const sources = (['stdio', 'url', 'transport'] as const).filter((k) => upstream?.[k] !== undefined);
    if (sources.length !== 1)
      throw new TypeError(
        `upstream ${JSON.stringify(namespace)} needs exactly one of "stdio", "url", "transport"; got ${sources.length === 0 ? 'none' : sources.join(', ')}`,
      );
  }
  let governance = compiledGovernance(set);
  checkToolNamespaces(set, options.upstreams);
  let defaultContext: GateContext = options.context ?? set.context();
  checkContext(defaultContext);
  const auditSink = options.audit;
  const audit = (record: GatewayAuditRecord): void => {
    if (!auditSink) return;
    try {
      auditSink(record);
    } catch (error) {
      process.emitWarning(
        `toolgate: the gateway's audit sink threw: ${error instanceof Error ? error.message : String(error)}`,
        { code: 'TOOLGATE_AUDIT' },
      );
    }
  };
  const now = (): string => new Date().toISOString();
  const name = options.name ?? 'toolgate-gateway';
  let pins = options.pins ? new PinStore(options.pins.file) : null;
  if (options.approvals !== undefined) checkApprovals(options.approvals);
  if (options.inbox !== undefined) {
    checkInbox(options.inbox);
    if (options.approvals !== undefined)
      throw new TypeError('options "approvals" and "inbox" exclude each other: give one place where asks wait');
  }
  let onDrift = options.pins?.onDrift ?? 'refuse';

  /** Tool canonical name → the drift diff of a drifted tool. */
  const drifted = new Map<string, { readonly diff: string; readonly upstream: Upstream }>();
  const isDrifted = (tool: Tool): boolean => {
    const entry = drifted.get(tool.canonicalName);
    if (!entry || !pins) return false;
    const definition = entry.upstream.connection?.definition(tool.name);
    // A `toolgate pin --accept` since: the lock file now pins exactly what is offered (a lock file that
    // lost the entry does not clear the drift).
    let matches: boolean;
    try {
      matches = definition !== undefined && pins.matches(tool.name, pinnedDefinition(definition));
    } catch {
      return true; // the lock file cannot be read now: what is pinned is unknown, the drift stands
    }
    if (matches) {
      drifted.delete(tool.canonicalName);
      return false;
    }
    return true;
  };

  const callTimeout = Math.max(...Object.values(options.upstreams).map((u) => u.callTimeoutMs ?? 60_000), 1000);
  const registry = new ToolRegistry({
    toolTimeoutMs: callTimeout + 1000,
    handlerTimeoutMs: options.approvalTimeoutMs ?? 120_000,
  });
  const enforced = (policy: PermissionPolicy): PermissionPolicy =>
    pins ? withPinRule(policy, isDrifted, onDrift) : policy;
  registry.setPermissionPolicy(enforced(set.policy));

  const downstreams = new Set<Downstream>();
  const stateListeners = new Set<(upstream: Upstream) => void>();
  /** Tool canonical name → its upstream. */
  const toolOwner = new Map<string, Upstream>();
  /** Resource URI → namespaces that listed it; templates by namespace; prompt names by namespace. */
  const resourceOwners = new Map<string, Set<string>>();
  const templatesOf = new Map<string, readonly UriTemplate[]>();
  const promptsOf = new Map<string, ReadonlySet<string>>();
  /** `namespace uri` → the downstream servers subscribed. */
  const subscriptions = new Map<string, Set<Server>>();
  let closed = false;

  // Notifications on their way to a client (progress, log messages) are delivered before the result of
  // the request they belong to: a client drops progress that arrives after the result.
  const inTransit = new WeakMap<Server, Set<Promise<void>>>();
  const track = (server: Server, sending: Promise<void>): Promise<void> => {
    let set = inTransit.get(server);
    if (!set) inTransit.set(server, (set = new Set()));
    const settled = sending.catch(() => undefined);
    set.add(settled);
    void settled.then(() => set.delete(settled));
    return settled;
  };
  const delivered = async (server: Server): Promise<void> => {
    await Promise.all(inTransit.get(server) ?? []);
  };

  const broadcast = (send: (server: Server) => Promise<void>): void => {
    for (const d of downstreams) {
      if (d.server.transport === undefined) continue;
      send(d.server).catch(() => undefined);
    }
  };

  const checkPins = (upstream: Upstream): void => {
    const connection = upstream.connection;
    if (!connection) return;
    for (const registered of connection.tools) {
      toolOwner.set(canonical(registered), upstream);
      if (!pins) continue;
      const definition = connection.definition(registered);
      if (!definition) continue;
      let check: ReturnType<PinStore['check']>;
      try {
        check = pins.check(registered, pinnedDefinition(definition));
      } catch (error) {
        // The lock file cannot be read (edited by hand, removed permissions): whether this definition is
        // the pinned one is unknown, so it counts as drifted until the lock file reads again and pins it.
        const diff = `the lock file cannot be read, so this definition cannot be checked against its pin: ${error instanceof Error ? error.message : String(error)}`;
        const known = drifted.get(canonical(registered));
        drifted.set(canonical(registered), { diff, upstream });
        if (known?.diff !== diff)
          audit({ type: 'pin', time: now(), event: 'drift', upstream: upstream.namespace, tool: registered, diff });
        continue;
      }
      if (check.state === 'drift') {
        const known = drifted.get(canonical(registered));
        drifted.set(canonical(registered), { diff: check.diff, upstream });
        if (known?.diff !== check.diff)
          audit({
            type: 'pin',
            time: now(),
            event: 'drift',
            upstream: upstream.namespace,
            tool: registered,
            diff: check.diff,
          });
      } else {
        drifted.delete(canonical(registered));
        if (check.state === 'new')
          audit({ type: 'pin', time: now(), event: 'pinned', upstream: upstream.namespace, tool: registered });
      }
    }
  };

  const events: UpstreamEvents = {
    stateChanged(upstream) {
      if (upstream.state === 'ready') {
        checkPins(upstream);
        audit({ type: 'upstream', time: now(), upstream: upstream.namespace, state: 'ready' });
        broadcast((s) => s.sendToolListChanged());
        broadcast((s) => s.sendResourceListChanged());
        broadcast((s) => s.sendPromptListChanged());
      } else if (upstream.state === 'down') {
        audit({ type: 'upstream', time: now(), upstream: upstream.namespace, state: 'down', reason: upstream.reason });
      }
      for (const listener of stateListeners) listener(upstream);
    },
    toolsChanged(upstream) {
      checkPins(upstream);
      broadcast((s) => s.sendToolListChanged());
    },
    resourcesChanged() {
      broadcast((s) => s.sendResourceListChanged());
    },
    promptsChanged() {
      broadcast((s) => s.sendPromptListChanged());
    },
    resourceUpdated(upstream, uri) {
      const normal = normalResourceUri(uri);
      if (!normal.ok) return;
      for (const server of subscriptions.get(`${upstream.namespace} ${normal.uri}`) ?? [])
        server.sendResourceUpdated({ uri }).catch(() => undefined);
    },
    log(upstream, params) {
      // A log message goes to the one client with a request in flight to that upstream (it is about their
      // request); with none, to the clients that asked for logging. With several in flight it cannot be
      // attributed, and a shared upstream's log line must not reach another tenant: it is not delivered.
      const inflight = upstream.inflight;
      if (inflight.length > 1) return;
      const targets = inflight.length === 1 ? inflight : [...downstreams].filter((d) => d.logging).map((d) => d.server);
      for (const server of targets)
        void track(server, server.notification({ method: 'notifications/message', params }));
    },
  };

  const modeRecord = (event: 'start' | 'reload' | 'refused', changes: readonly string[], error?: string): void =>
    audit({
      type: 'mode',
      time: now(),
      event,
      policy: set.version,
      mode: set.data.mode ?? 'enforce',
      shadowRules: ruleModes(set)
        .filter((r) => r.mode === 'shadow')
        .map((r) => r.name),
      pin: pins ? onDrift : 'off',
      changes,
      ...(error !== undefined ? { error } : {}),
    });
  modeRecord('start', [startText(set)]);

  const upstreams = new Map<string, Upstream>();
  for (const [namespace, upstreamOptions] of Object.entries(options.upstreams))
    upstreams.set(namespace, new Upstream(namespace, upstreamOptions, registry, events));
  await Promise.all([...upstreams.values()].map((u) => u.start()));

  /**
   * A tool name whose namespace is a prefixed upstream's may only be served by that upstream: an
   * unprefixed upstream offering `fs:write_file` must not pass for the `fs` upstream (and its rules).
   */
  const impostor = (registered: string, owner: Upstream): boolean => {
    const form = canonical(registered);
    const colon = form.indexOf(':');
    if (colon < 0) return false;
    const claimed = [...upstreams.values()].find((u) => u.prefixed && canonical(u.namespace) === form.slice(0, colon));
    return claimed !== undefined && claimed !== owner;
  };

  /** The upstream serving a tool name (also while it is down), if any. */
  const ownerOfTool = (toolName: string): Upstream | undefined => {
    const form = canonical(toolName);
    const owner = toolOwner.get(form);
    if (owner) return owner;
    for (const upstream of upstreams.values()) {
      if (upstream.prefixed && upstream.own(form) !== undefined && form.startsWith(`${canonical(upstream.namespace)}:`))
        return upstream;
      for (const known of upstream.knownTools) if (canonical(known) === form) return upstream;
    }
    return undefined;
  };

  const unavailable = (upstream: Upstream, what: string): McpError =>
    new McpError(
      ErrorCode.InternalError,
      `toolgate gateway: upstream "${upstream.namespace}" is unavailable (${upstream.reason}); ${what} is refused until it is back`,
    );

  /**
   * Every item of one list method from every ready upstream that serves it, page by page, each page
   * asked in the current downstream request's scope: `list` is the client's method, `items` a page's list.
   */
  const listAll = async <P extends { nextCursor?: string | undefined }, T>(
    capability: 'resources' | 'prompts',
    list: (client: Client, params: { cursor?: string }, options: RequestOptions) => Promise<P>,
    itemsOf: (page: P) => T[],
  ): Promise<Map<Upstream, T[]>> => {
    const out = new Map<Upstream, T[]>();
    await Promise.all(
      [...upstreams.values()].map(async (upstream) => {
        if (upstream.state !== 'ready' || !upstream.capabilities[capability]) return;
        const items: T[] = [];
        let cursor: string | undefined;
        try {
          do {
            const params = cursor === undefined ? {} : { cursor };
            const page = await upstream.forward(() =>
              list(upstream.client!, params, upstream.requestOptions(callScope.getStore())),
            );
            items.push(...itemsOf(page));
            cursor = page.nextCursor;
          } while (cursor !== undefined && items.length < MAX_LISTED);
          out.set(upstream, items);
        } catch (error) {
          // One upstream failing its listing does not fail the others' (it is reported once per listing).
          process.emitWarning(
            `toolgate gateway: listing ${capability} of upstream "${upstream.namespace}" failed: ${error instanceof Error ? error.message : String(error)}`,
            { code: 'TOOLGATE_GATEWAY_LIST' },
          );
        }
      }),
    );
    return out;
  };

  /** The upstream serving a resource URI (normal form), or an McpError saying why none can. */
  const routeResource = async (uri: string): Promise<Upstream> => {
    const pick = (namespaces: Iterable<string>): Upstream | undefined => {
      const found = [...namespaces].map((n) => upstreams.get(n)).filter((u): u is Upstream => u !== undefined);
      if (found.length > 1)
        throw new McpError(
          ErrorCode.InvalidParams,
          `toolgate gateway: the resource ${JSON.stringify(uri)} is served by several upstreams (${found.map((u) => u.namespace).join(', ')}); the gateway will not guess`,
        );
      return found[0];
    };
    const listed = resourceOwners.get(uri);
    const byList = listed ? pick(listed) : undefined;
    if (byList) return byList;
    const byTemplate = pick(
      [...templatesOf.entries()]
        .filter(([, templates]) => templates.some((t) => t.match(uri) !== null))
        .map(([n]) => n),
    );
    if (byTemplate) return byTemplate;
    const serving = [...upstreams.values()].filter((u) => u.state !== 'ready' || u.capabilities.resources);
    if (serving.length === 1) return serving[0]!;
    // Not seen yet: list once more, then decide.
    await listResources();
    const again = resourceOwners.get(uri);
    const found = again ? pick(again) : undefined;
    if (found) return found;
    throw new McpError(
      ErrorCode.InvalidParams,
      `toolgate gateway: no upstream is known to serve the resource ${JSON.stringify(uri)}`,
    );
  };

  const listResources = async (): Promise<{ upstream: Upstream; resource: Resource }[]> => {
    const all = await listAll(
      'resources',
      (client, params, options) => client.listResources(params, options),
      (page) => page.resources,
    );
    const out: { upstream: Upstream; resource: Resource }[] = [];
    for (const [upstream, resources] of all) {
      for (const resource of resources) {
        const normal = normalResourceUri(resource.uri);
        if (!normal.ok) continue;
        let owners = resourceOwners.get(normal.uri);
        if (!owners) resourceOwners.set(normal.uri, (owners = new Set()));
        owners.add(upstream.namespace);
        out.push({ upstream, resource });
      }
    }
    return out;
  };

  /** The upstream and own name of a prompt name as shown. */
  const routePrompt = async (shown: string): Promise<{ upstream: Upstream; own: string }> => {
    const candidates: { upstream: Upstream; own: string }[] = [];
    for (const upstream of upstreams.values()) {
      if (!upstream.prefixed) continue;
      const own = upstream.own(shown);
      if (own !== undefined) candidates.push({ upstream, own });
    }
    if (candidates.length === 0) {
      for (const upstream of upstreams.values())
        if (!upstream.prefixed && promptsOf.get(upstream.namespace)?.has(shown))
          candidates.push({ upstream, own: shown });
    }
    if (candidates.length === 0) {
      const bare = [...upstreams.values()].filter(
        (u) => !u.prefixed && (u.state !== 'ready' || u.capabilities.prompts),
      );
      if (bare.length === 1) candidates.push({ upstream: bare[0]!, own: shown });
    }
    if (candidates.length !== 1)
      throw new McpError(
        ErrorCode.InvalidParams,
        candidates.length === 0
          ? `toolgate gateway: no upstream serves a prompt named ${JSON.stringify(shown)}`
          : `toolgate gateway: the prompt ${JSON.stringify(shown)} is served by several upstreams; the gateway will not guess`,
      );
    return candidates[0]!;
  };

  const createServer = (serverOptions: { readonly context?: GatewayRequestContext } = {}): Server => {
    if (serverOptions.context !== undefined) checkContext(serverOptions.context);
    // Read per request: a reload changes the gateway's own context for the servers already connected.
    const contextOption = (): GatewayRequestContext => serverOptions.context ?? defaultContext;
    const server = new Server(
      { name, version: '0.2.0' },
      {
        capabilities: {
          tools: { listChanged: true },
          resources: { subscribe: true, listChanged: true },
          prompts: { listChanged: true },
          completions: {},
          logging: {},
        },
      },
    );
    const downstream: Downstream = { server, logging: false };
    type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;
    const contextOf = (extra: Extra): GateContext => {
      const option = contextOption();
      return typeof option === 'function' ? option({ authInfo: extra.authInfo, sessionId: extra.sessionId }) : option;
    };
    const scopeOf = (extra: Extra): CallScope => ({
      server,
      progressToken: extra._meta?.progressToken,
      sendNotification: (n) => track(server, extra.sendNotification(n as ServerNotification)),
    });
    /**
     * Forwards one request to `upstream` in the downstream request's scope (its progress relayed, cancelled
     * with it); the notifications it caused are delivered before its result.
     */
    const forwarded = async <T>(
      extra: Extra,
      upstream: Upstream,
      request: (client: Client, options: RequestOptions) => Promise<T>,
    ): Promise<T> => {
      const result = await callScope.run(scopeOf(extra), () =>
        upstream.forward((scope) =>
          request(upstream.client!, upstream.requestOptions(scope, { signal: extra.signal })),
        ),
      );
      await delivered(server);
      return result;
    };
    const who = (extra: Extra): { caller: string | null; session: string | null } => ({
      caller: contextOf(extra).caller?.id ?? null,
      session: extra.sessionId ?? null,
    });

    /** Decides a resource or prompt access; asks by elicitation; refuses with an McpError. */
    const govern = async (
      kind: 'resource' | 'prompt',
      action: 'read' | 'subscribe' | 'get' | 'complete',
      policy: ItemPolicy,
      upstream: Upstream,
      key: string,
      target: string,
      args: Readonly<Record<string, unknown>>,
      extra: Extra,
    ): Promise<void> => {
      const decidedUnder = governance;
      let verdict: ItemVerdict = policy.decide(upstream.namespace, key, args, action === 'complete');
      let effect: 'allow' | 'deny' = verdict.effect === 'allow' ? 'allow' : 'deny';
      let reason = verdict.reason;
      if (verdict.effect === 'ask') {
        const answer = await askByElicitation(
          server,
          `Allow ${action === 'get' ? 'getting the prompt' : action === 'complete' ? 'completing for' : `${action === 'read' ? 'reading' : 'subscribing to'} the resource`} ${displaySafe(target)}${Object.keys(args).length > 0 ? ` with ${displaySafe(JSON.stringify(args))}` : ''}? Rule ${displaySafe(JSON.stringify(verdict.rule))} asks for approval: ${displaySafe(verdict.reason)}`,
          options.approvalTimeoutMs ?? 120_000,
        );
        effect = answer ? 'allow' : 'deny';
        if (!answer) reason = `${verdict.reason} (not approved)`;
        // Reloaded while the person was asked: an approval stands only if the new policy allows, or still asks
        // under the rule the person was shown (as for tool calls); another rule's ask was not answered.
        if (answer && governance !== decidedUnder) {
          const asked = verdict.rule;
          // Decided as it was asked: a completion knows only some arguments (a rule needing another refuses).
          verdict = (kind === 'resource' ? governance.resources : governance.prompts).decide(
            upstream.namespace,
            key,
            args,
            action === 'complete',
          );
          effect =
            verdict.effect === 'allow' || (verdict.effect === 'ask' && verdict.rule === asked) ? 'allow' : 'deny';
          reason =
            effect === 'deny' && verdict.effect === 'ask'
              ? `${verdict.reason} (the policy was reloaded while a person was asked under rule ${JSON.stringify(asked)}; ask again)`
              : verdict.reason;
        }
      }
      audit({
        type: kind,
        action,
        time: now(),
        ...who(extra),
        upstream: upstream.namespace,
        target,
        effect,
        asked: verdict.effect === 'ask',
        rule: verdict.rule,
        reason,
        ...(verdict.shadow ? { shadow: verdict.shadow } : {}),
      });
      if (effect === 'deny')
        throw new McpError(
          ErrorCode.InvalidRequest,
          `toolgate: the ${kind} ${JSON.stringify(target)} is refused by the policy${verdict.rule ? ` (rule ${JSON.stringify(verdict.rule)})` : ''}: ${reason}`,
        );
    };

    server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
      const tools: McpTool[] = [];
      for (const permitted of registry.allowlist(contextOf(extra)).names) {
        const form = canonical(permitted);
        const upstream = toolOwner.get(form);
        const connection = upstream?.connection;
        const tool = registry.get(permitted);
        if (!connection || !tool || impostor(tool.name, upstream)) continue;
        const definition = connection.definition(tool.name);
        if (!definition) continue;
        if (onDrift === 'refuse' && drifted.has(form) && isDrifted(tool)) continue;
        tools.push({ ...definition, name: tool.name } as McpTool);
      }
      return { tools };
    });

    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
      const base = contextOf(extra);
      const toolName = request.params.name;
      const upstream = ownerOfTool(toolName);
      if (upstream && impostor(toolName, upstream)) {
        const reason = `toolgate gateway: the tool ${JSON.stringify(toolName)} is offered by upstream "${upstream.namespace}" under another upstream's namespace; refused`;
        audit({
          type: 'tool',
          time: now(),
          ...who(extra),
          upstream: upstream.namespace,
          decision: null,
          status: 'unavailable',
          reason,
        });
        return { isError: true, content: [{ type: 'text', text: reason }] };
      }
      if (upstream && upstream.state !== 'ready') {
        const reason = unavailable(upstream, `the tool ${JSON.stringify(toolName)}`).message;
        audit({
          type: 'tool',
          time: now(),
          ...who(extra),
          upstream: upstream.namespace,
          decision: null,
          status: 'unavailable',
          reason,
        });
        return { isError: true, content: [{ type: 'text', text: reason }] };
      }
      const call = { id: `mcp-${randomUUID()}`, name: toolName, arguments: request.params.arguments ?? {} };
      const context: GateContext = { ...base, signal: extra.signal };
      const scope = scopeOf(extra);
      let approval: ApprovalNote | undefined;
      const approver = options.approvals
        ? storeApprover(
            options.approvals,
            {
              caller: base.caller?.id ?? null,
              subject: extra.authInfo ? sessionSubject(extra.authInfo) : null,
              agent: typeof base.agent === 'string' ? base.agent : (base.agent?.name ?? 'agent'),
              tenant: base.tenant?.id ?? null,
              policyVersion: registry.getPermissionPolicy()?.version ?? null,
            },
            (n) => (approval = n),
          )
        : elicitationApprover(server, options.approvalTimeoutMs);
      const route = options.inbox
        ? inboxRoute(
            options.inbox,
            {
              server,
              signal: extra.signal,
              progressToken: extra._meta?.progressToken,
              sendProgress: (message) =>
                scope.sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken: extra._meta!.progressToken!, progress: 0, message },
                }),
            },
            (n) => (approval = n),
          )
        : approverRoute(registry, approver);
      const result = await callScope.run(scope, async () => {
        const env = environmentOf(registry);
        // A call that waited for a person is decided again under the context and policy in force then (a
        // reload may have narrowed the agent's tools or changed the rules).
        const refresh = () => ({ context: { ...contextOf(extra), signal: extra.signal }, env: env.current() });
        const [dispatched] = await dispatchCalls([readCall(call)], context, env, { ...route, refresh });
        return dispatched as ToolResult;
      });
      const decision = result.decision;
      const record: ToolAuditRecord = {
        type: 'tool',
        time: now(),
        ...who(extra),
        upstream: upstream?.namespace ?? null,
        decision,
        status: result.status,
        ...(approval ? { approval } : {}),
      };
      const shadow = shadowOf(set, registry, decision);
      const drift = drifted.get(decision.canonical);
      audit({ ...record, ...(shadow ? { shadow } : {}), ...(drift ? { drift: drift.diff } : {}) });
      await delivered(server);
      if (result.status === 'ok') return result.value as CallToolResult;
      if (result.status === 'error' && upstream && upstream.state !== 'ready')
        return {
          isError: true,
          content: [
            {
              type: 'text',
              text: `toolgate gateway: upstream "${upstream.namespace}" went down during the call (${upstream.reason}); the call may not have completed. ${result.content}`,
            },
          ],
        };
      // The upstream's own error result is forwarded as it came.
      if (result.status === 'error' && scope.result?.isError === true) return scope.result as CallToolResult;
      if (approval && (approval.state === 'asked' || approval.state === 'pending'))
        return {
          isError: true,
          content: [
            {
              type: 'text',
              text: `This call waits for a person's approval (request ${approval.id}, rule ${JSON.stringify(decision.rule)}: ${decision.reason}). It has not run. Call it again, with the same arguments, once the request is answered.`,
            },
          ],
        };
      const drifts = decision.rule === PIN_RULE || decision.rule?.endsWith(' (drifted definition)') ? drift : undefined;
      const text = drifts ? `${result.content}\n${drifts.diff}` : result.content;
      return { isError: true, content: [{ type: 'text', text }] };
    });

    server.setRequestHandler(ListResourcesRequestSchema, async (request, extra) => {
      noCursor(request.params?.cursor);
      const resources: Resource[] = [];
      for (const { upstream, resource } of await callScope.run(scopeOf(extra), listResources)) {
        const normal = normalResourceUri(resource.uri);
        if (normal.ok && governance.resources.visible(upstream.namespace, normal.uri)) resources.push(resource);
      }
      return { resources };
    });

    server.setRequestHandler(ListResourceTemplatesRequestSchema, async (request, extra) => {
      noCursor(request.params?.cursor);
      const all = await callScope.run(scopeOf(extra), () =>
        listAll(
          'resources',
          (client, params, options) => client.listResourceTemplates(params, options),
          (page): ResourceTemplate[] => page.resourceTemplates,
        ),
      );
      const resourceTemplates: ResourceTemplate[] = [];
      for (const [upstream, templates] of all) {
        const compiled: UriTemplate[] = [];
        for (const template of templates) {
          try {
            compiled.push(new UriTemplate(template.uriTemplate));
          } catch {
            continue; // a template that does not parse cannot be routed
          }
          if (governance.resources.mayPermit(upstream.namespace)) resourceTemplates.push(template);
        }
        templatesOf.set(upstream.namespace, compiled);
      }
      return { resourceTemplates };
    });

    server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
      const normal = normalResourceUri(request.params.uri);
      if (!normal.ok) throw new McpError(ErrorCode.InvalidParams, `toolgate: ${normal.problem}`);
      const upstream = await routeResource(normal.uri);
      if (upstream.state !== 'ready') throw unavailable(upstream, `reading ${JSON.stringify(normal.uri)}`);
      await govern('resource', 'read', governance.resources, upstream, normal.uri, normal.uri, {}, extra);
      return forwarded(extra, upstream, (client, options) =>
        client.readResource({ ...request.params, uri: normal.uri }, options),
      );
    });

    const subscription = async (uri: string, subscribe: boolean, extra: Extra): Promise<Record<string, never>> => {
      const normal = normalResourceUri(uri);
      if (!normal.ok) throw new McpError(ErrorCode.InvalidParams, `toolgate: ${normal.problem}`);
      const upstream = await routeResource(normal.uri);
      const key = `${upstream.namespace} ${normal.uri}`;
      let servers = subscriptions.get(key);
      if (!subscribe) {
        servers?.delete(server);
        if (servers && servers.size === 0) {
          subscriptions.delete(key);
          await upstream.client?.unsubscribeResource({ uri: normal.uri }).catch(() => undefined);
        }
        return {};
      }
      if (upstream.state !== 'ready') throw unavailable(upstream, `subscribing to ${JSON.stringify(normal.uri)}`);
      if (!upstream.capabilities.resources?.subscribe)
        throw new McpError(
          ErrorCode.MethodNotFound,
          `toolgate gateway: upstream "${upstream.namespace}" does not support resource subscriptions`,
        );
      await govern('resource', 'subscribe', governance.resources, upstream, normal.uri, normal.uri, {}, extra);
      if (!servers) {
        await upstream.forward((scope) =>
          upstream.client!.subscribeResource({ uri: normal.uri }, upstream.requestOptions(scope)),
        );
        subscriptions.set(key, (servers = new Set()));
      }
      servers.add(server);
      return {};
    };
    server.setRequestHandler(SubscribeRequestSchema, (request, extra) => subscription(request.params.uri, true, extra));
    server.setRequestHandler(UnsubscribeRequestSchema, (request, extra) =>
      subscription(request.params.uri, false, extra),
    );

    server.setRequestHandler(ListPromptsRequestSchema, async (request, extra) => {
      noCursor(request.params?.cursor);
      const all = await callScope.run(scopeOf(extra), () =>
        listAll(
          'prompts',
          (client, params, options) => client.listPrompts(params, options),
          (page): Prompt[] => page.prompts,
        ),
      );
      const prompts: Prompt[] = [];
      for (const [upstream, list] of all) {
        promptsOf.set(upstream.namespace, new Set(list.map((p) => p.name)));
        for (const prompt of list)
          if (governance.prompts.visible(upstream.namespace, prompt.name))
            prompts.push({ ...prompt, name: upstream.shown(prompt.name) });
      }
      return { prompts };
    });

    server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
      const { upstream, own } = await routePrompt(request.params.name);
      if (upstream.state !== 'ready') throw unavailable(upstream, `the prompt ${JSON.stringify(request.params.name)}`);
      await govern(
        'prompt',
        'get',
        governance.prompts,
        upstream,
        own,
        request.params.name,
        request.params.arguments ?? {},
        extra,
      );
      return forwarded(extra, upstream, (client, options) =>
        client.getPrompt({ ...request.params, name: own }, options),
      );
    });

    server.setRequestHandler(CompleteRequestSchema, async (request, extra) => {
      const ref = request.params.ref;
      let upstream: Upstream;
      let params = request.params;
      if (ref.type === 'ref/prompt') {
        const routed = await routePrompt(ref.name);
        upstream = routed.upstream;
        // Decided as getting the prompt with the arguments the completion knows; a rule whose conditions
        // need another argument cannot be judged, and refuses.
        const known = request.params.context?.arguments ?? {};
        await govern('prompt', 'complete', governance.prompts, upstream, routed.own, ref.name, known, extra);
        params = { ...params, ref: { ...ref, name: routed.own } };
      } else {
        const template = ref.uri;
        const owners = [...templatesOf.entries()].filter(([, ts]) => ts.some((t) => t.toString() === template));
        const found = owners.length === 1 ? upstreams.get(owners[0]![0]) : undefined;
        const single = [...upstreams.values()].filter((u) => u.capabilities.resources);
        upstream = found ?? (single.length === 1 ? single[0]! : (undefined as never));
        if (!upstream)
          throw new McpError(
            ErrorCode.InvalidParams,
            `toolgate gateway: no upstream is known to serve the resource template ${JSON.stringify(template)}`,
          );
        if (!governance.resources.mayPermit(upstream.namespace))
          throw new McpError(
            ErrorCode.InvalidRequest,
            `toolgate: the resources of upstream "${upstream.namespace}" are refused by the policy`,
          );
        // Completing a template names what it may expand to: decided as reaching the template's URI (a deny
        // on docs://secret/** refuses completing docs://secret/{name}), as a prompt completion is decided.
        const normal = normalResourceUri(template);
        if (!normal.ok) throw new McpError(ErrorCode.InvalidParams, `toolgate: ${normal.problem}`);
        await govern('resource', 'complete', governance.resources, upstream, normal.uri, template, {}, extra);
      }
      if (upstream.state !== 'ready') throw unavailable(upstream, 'completion');
      if (!upstream.capabilities.completions)
        throw new McpError(
          ErrorCode.MethodNotFound,
          `toolgate gateway: upstream "${upstream.namespace}" does not offer completions`,
        );
      return forwarded(extra, upstream, (client, options) => client.complete(params, options));
    });

    server.setRequestHandler(SetLevelRequestSchema, async (request, extra) => {
      downstream.logging = true;
      const level: LoggingLevel = request.params.level;
      await callScope.run(scopeOf(extra), () =>
        Promise.all(
          [...upstreams.values()]
            .filter((u) => u.state === 'ready' && u.capabilities.logging)
            .map((u) => u.forward((scope) => u.client!.setLoggingLevel(level, u.requestOptions(scope)))),
        ),
      );
      return {};
    });

    // Anything else a client asks is refused with an error that names it (never silently dropped).
    server.fallbackRequestHandler = async (request) => {
      throw new McpError(
        ErrorCode.MethodNotFound,
        `toolgate gateway: the method ${JSON.stringify(request.method)} is not forwarded by the gateway`,
      );
    };

    downstreams.add(downstream);
    const previous = server.onclose;
    server.onclose = () => {
      previous?.();
      downstreams.delete(downstream);
      for (const [key, servers] of subscriptions) {
        if (!servers.delete(server) || servers.size > 0) continue;
        subscriptions.delete(key);
        const [namespace, uri] = [key.slice(0, key.indexOf(' ')), key.slice(key.indexOf(' ') + 1)];
        void upstreams
          .get(namespace)
          ?.client?.unsubscribeResource({ uri })
          .catch(() => undefined);
      }
    };
    return server;
  };

  /** Swaps in `next` after checking all of it; refuses (keeping the policy in force) on any problem. */
  const swap = async (
    source: PolicySet | string,
    reloadOptions: GatewayReloadOptions,
  ): Promise<GatewayReloadResult> => {
    const refuse = (error: string): GatewayReloadResult => {
      modeRecord('refused', [`the new policy was refused; policy ${set.version} stays in force: ${error}`], error);
      return { ok: false, version: set.version, error };
    };
    if (closed) return refuse('the gateway is closed');
    let next: PolicySet;
    if (typeof source === 'string') {
      const read = await readPolicyFile(source);
      if (!read.ok)
        return refuse(
          `the policy file ${JSON.stringify(source)} was refused:\n${read.issues.map((i) => `  ${formatIssue(i)}`).join('\n')}`,
        );
      next = read.policy;
    } else if (isPolicySet(source)) next = source;
    else return refuse(`a reload needs a loaded policy file (a PolicySet) or a file name, got ${describe(source)}`);
    if (closed) return refuse('the gateway is closed');
    let nextGovernance: ReturnType<typeof compiledGovernance>;
    let nextContext: GateContext;
    let nextPins: PinStore | null = pins;
    let nextOnDrift = onDrift;
    try {
      nextGovernance = compiledGovernance(next);
      checkToolNamespaces(next, options.upstreams);
      const context = reloadOptions.context;
      nextContext = (typeof context === 'function' ? context(next) : context) ?? options.context ?? next.context();
      checkContext(nextContext);
      if (reloadOptions.pins !== undefined) {
        const wanted = typeof reloadOptions.pins === 'function' ? reloadOptions.pins(next) : reloadOptions.pins;
        nextPins = wanted === null ? null : wanted.file === pins?.file ? pins : new PinStore(wanted.file);
        nextOnDrift = wanted?.onDrift ?? 'refuse';
      }
      // The lock file is read again now: a broken one is refused here, not at the next call.
      if (nextPins) readLockFile(nextPins.file);
    } catch (error) {
      return refuse(error instanceof Error ? error.message : String(error));
    }
    const changes = policyChanges(set, next, pins ? onDrift : 'off', nextPins ? nextOnDrift : 'off');
    if (pins && nextPins && nextPins.file !== pins.file) changes.push(`lock file: ${pins.file} → ${nextPins.file}`);
    // The swap: one synchronous block, so no call is decided under half of the old and half of the new.
    if (nextPins !== pins) drifted.clear();
    set = next;
    governance = nextGovernance;
    defaultContext = nextContext;
    pins = nextPins;
    onDrift = nextOnDrift;
    registry.setPermissionPolicy(enforced(set.policy));
    for (const upstream of upstreams.values()) checkPins(upstream);
    if (changes.length > 0) modeRecord('reload', changes);
    broadcast((s) => s.sendToolListChanged());
    broadcast((s) => s.sendResourceListChanged());
    broadcast((s) => s.sendPromptListChanged());
    return { ok: true, version: set.version, changes };
  };
  // Reloads run one after another, so a slow read cannot overwrite a newer policy.
  let reloading: Promise<unknown> = Promise.resolve();

  return {
    registry,
    get context() {
      return defaultContext;
    },
    get policy() {
      return set;
    },
    reload(source, reloadOptions = {}) {
      const result = reloading.then(() => swap(source, reloadOptions));
      reloading = result.catch(() => undefined);
      return result;
    },
    upstreams,
    createServer,
    onUpstreamState(listener) {
      stateListeners.add(listener);
      return () => stateListeners.delete(listener);
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...downstreams].map((d) => d.server.close()));
      await Promise.allSettled([...upstreams.values()].map((u) => u.close()));
    },
  };
}

function noCursor(cursor: unknown): void {
  if (cursor !== undefined)
    throw new McpError(
      ErrorCode.InvalidParams,
      'toolgate gateway: lists are returned whole, in one page; there is no next page',
    );
}

/** What the shadow policy would have decided for a call that reached the policy, where it differs. */
function shadowOf(
  set: PolicySet,
  registry: ToolRegistry,
  decision: ToolAuditRecord['decision'],
): ShadowRecord | undefined {
  if (!set.shadow || !decision || decision.parameters === null) return undefined;
  if (decision.stage !== 'policy' && decision.stage !== 'handler') return undefined;
  const tool = registry.get(decision.tool);
  if (!tool) return undefined;
  const would = set.shadow.evaluate(tool, decision.parameters);
  const enforced = set.policy.evaluate(tool, decision.parameters);
  if (would.result === enforced.result && would.rule?.name === enforced.rule?.name) return undefined;
  return {
    effect: would.result,
    rule: would.rule?.name ?? null,
    reason:
      would.by === 'rule_error' ? would.error : (would.rule?.reason ?? `the policy's fallback is ${would.result}`),
  };
}

/** Asks the person behind the client by MCP elicitation; false when they cannot be asked or do not accept. */
async function askByElicitation(server: Server, message: string, timeoutMs: number): Promise<boolean> {
  if (!canElicit(server)) return false;
  try {
    const answer = await server.elicitInput(
      {
        mode: 'form',
        message,
        requestedSchema: {
          type: 'object',
          properties: { approve: { type: 'boolean', title: 'Allow', default: false } },
          required: ['approve'],
        },
      },
      { timeout: timeoutMs },
    );
    return answer.action === 'accept' && answer.content?.['approve'] === true;
  } catch {
    return false; // fail closed: no answer is no
  }
}

function canElicit(server: Server): boolean {
  const elicitation = server.getClientCapabilities()?.elicitation as { form?: unknown; url?: unknown } | undefined;
  return !!elicitation && !(elicitation.form === undefined && elicitation.url !== undefined);
}

/**
 * The approver for a tool call's ask: MCP elicitation when the connected client declares it can answer a
 * form; otherwise none, and the registry's handler or its fallback (deny) decides. `timeoutMs`: how long the
 * person has to answer before the call is denied (@default 120_000).
 */
export function elicitationApprover(server: Server, timeoutMs = 120_000): PermissionHandler | undefined {
  if (!canElicit(server)) return undefined;
  // Everything shown to the person is escaped (controls, bidi and other invisible characters), so the
  // prompt reads as the call that runs.
  return async (request: PermissionRequest) =>
    (await askByElicitation(
      server,
      `Allow the tool call ${displaySafe(request.toolName)}(${displaySafe(JSON.stringify(request.parameters))})? Rule ${displaySafe(JSON.stringify(request.ruleName))} asks for approval: ${displaySafe(request.reason)}`,
      timeoutMs,
    ))
      ? 'allow'
      : 'deny';
}

/** The gateway's route: its person is `approver` (elicitation or the approval stores), asked as a handler. */
function approverRoute(registry: ToolRegistry, approver: PermissionHandler | undefined): Route {
  if (!approver) return { name: 'gateway', grouped: false };
  const handle = typeof approver === 'function' ? approver : (r: PermissionRequest) => approver.handle(r);
  return {
    name: 'gateway',
    grouped: false,
    ask: async (request): Promise<AskOutcome> => {
      const metadata = registry.get(request.toolName)?.metadata;
      if (!metadata) return { effect: 'invalid', reason: `the tool ${JSON.stringify(request.toolName)} is gone` };
      const answer = await handle({
        toolName: request.toolName,
        parameters: request.parameters,
        reason: request.reason,
        ruleName: request.rule,
        metadata,
        callId: request.binding.callId,
        agent: request.agent,
        tenant: request.tenant,
        runId: request.runId,
        caller: request.caller,
      });
      return answer === 'allow' || answer === 'deny' ? { effect: answer } : (answer as never);
    },
  };
}

function isPolicySet(value: unknown): value is PolicySet {
  return typeof value === 'object' && value !== null && (value as PolicySet).policy instanceof PermissionPolicy;
}

/** The resource and prompt rules of a policy file, compiled; a ConfigurationError listing what is wrong. */
function compiledGovernance(set: PolicySet): Extract<ReturnType<typeof compileGovernance>, { ok: true }> {
  const governance = compileGovernance(set);
  if (!governance.ok)
    throw new ConfigurationError(
      `the policy file's resource and prompt rules were refused:\n${governance.issues.map((i) => `  ${i.file}:${i.line}:${i.column}: ${i.message}`).join('\n')}`,
    );
  return governance;
}

/**
 * Refuses tool rules that select by `namespace` an upstream whose tools are shown unprefixed: those tools
 * carry no namespace (`echo`, not `docs:echo`), so the rule would select none of them — a deny on
 * `namespace: docs` would let every tool of `docs` through — while the same selector on a `resources:` or
 * `prompts:` rule does select that upstream. A ConfigurationError naming the rules.
 */
function checkToolNamespaces(set: PolicySet, upstreams: Readonly<Record<string, GatewayUpstreamOptions>>): void {
  const unprefixed = new Map<string, string>();
  for (const [namespace, upstream] of Object.entries(upstreams))
    if (upstream?.prefix === false) unprefixed.set(canonical(namespace), namespace);
  if (unprefixed.size === 0) return;
  const at = (rule: PolicySet['rules'][number]): string =>
    `  ${set.file ?? '<input>'}:${rule.position.line}:${rule.position.column}: rule ${JSON.stringify(rule.name)}`;
  // A name or glob whose literal namespace is an unprefixed upstream's (`docs:echo`, `docs:*`).
  const literalNamespace = (pattern: string): string | null => {
    const namespace = namespaceOf(pattern);
    return namespace !== null && !/[*?[\]{}\\]/.test(namespace) && unprefixed.has(namespace) ? namespace : null;
  };
  const problems: string[] = [];
  for (const rule of set.rules) {
    if (rule.namespace !== null && unprefixed.has(rule.namespace))
      problems.push(
        `${at(rule)} selects tools by namespace ${JSON.stringify(unprefixed.get(rule.namespace))}, whose upstream shows its tools unprefixed (prefix: false): they carry no namespace and the rule would select none of them; name the tools by their own names instead`,
      );
    for (const pattern of [...rule.exact, ...rule.globs.map((g) => g.pattern)]) {
      const namespace = literalNamespace(pattern);
      if (namespace !== null)
        problems.push(
          `${at(rule)} names ${JSON.stringify(pattern)}, but the upstream ${JSON.stringify(unprefixed.get(namespace))} shows its tools unprefixed (prefix: false): the rule would select none of them; name the tools by their own names instead`,
        );
    }
  }
  for (const name of Object.keys(set.data.tools ?? {})) {
    const namespace = literalNamespace(canonical(name));
    if (namespace === null) continue;
    const position = set.positionOf(['tools', name], true);
    problems.push(
      `  ${set.file ?? '<input>'}:${position.line}:${position.column}: tools: ${JSON.stringify(name)} declares metadata for a tool of the upstream ${JSON.stringify(unprefixed.get(namespace))}, which shows its tools unprefixed (prefix: false): it would apply to none of them; declare the tool by its own name instead`,
    );
  }
  if (problems.length > 0)
    throw new ConfigurationError(`the policy file's tool rules and declarations were refused:\n${problems.join('\n')}`);
}

/** Every rule of a policy file (tool, `resources:`, `prompts:`) with its mode and what it states. */
function ruleModes(set: PolicySet): { name: string; mode: 'enforce' | 'shadow'; data: string }[] {
  const of = (name: string, data: { readonly mode?: 'enforce' | 'shadow' | undefined }) => {
    const { mode, ...rest } = data;
    return { name, mode: mode ?? 'enforce', data: canonicalJson(rest) };
  };
  return [
    ...set.rules.map((r) => of(r.name, r.data)),
    ...(set.data.resources ?? []).map((r) => of(`resources:${r.name}`, r)),
    ...(set.data.prompts ?? []).map((r) => of(`prompts:${r.name}`, r)),
  ];
}

/** The mode record's words at start. */
function startText(set: PolicySet): string {
  const shadow = ruleModes(set).filter((r) => r.mode === 'shadow');
  return set.data.mode === 'shadow'
    ? 'the whole policy is in shadow mode: rules decide and are recorded, the allowlists alone are enforced'
    : `policy enforced${shadow.length > 0 ? `; in shadow mode: ${shadow.map((r) => r.name).join(', ')}` : ''}`;
}

/** Each change of enforcement between two policy files, in words (empty when they enforce the same). */
function policyChanges(
  before: PolicySet,
  after: PolicySet,
  pinBefore: 'refuse' | 'ask' | 'off',
  pinAfter: 'refuse' | 'ask' | 'off',
): string[] {
  const out: string[] = [];
  const same = (a: unknown, b: unknown): boolean => canonicalJson(a ?? null) === canonicalJson(b ?? null);
  if (before.version !== after.version) out.push(`policy ${before.version} → ${after.version}`);
  const modeBefore = before.data.mode ?? 'enforce';
  const modeAfter = after.data.mode ?? 'enforce';
  if (modeBefore !== modeAfter)
    out.push(
      modeAfter === 'shadow'
        ? 'the whole policy: enforce → shadow (its rules are recorded, no longer enforced; the allowlists alone are enforced)'
        : 'the whole policy: shadow → enforce (its rules are enforced)',
    );
  if ((before.data.fallback ?? 'deny') !== (after.data.fallback ?? 'deny'))
    out.push(`fallback: ${before.data.fallback ?? 'deny'} → ${after.data.fallback ?? 'deny'}`);
  if (pinBefore !== pinAfter) out.push(`pinned definitions: ${pinBefore} → ${pinAfter}`);
  const old = new Map(ruleModes(before).map((r) => [r.name, r]));
  const now = new Map(ruleModes(after).map((r) => [r.name, r]));
  for (const [name, rule] of now) {
    const was = old.get(name);
    if (!was) out.push(`rule ${JSON.stringify(name)} added (${rule.mode})`);
    else {
      if (was.mode !== rule.mode) out.push(`rule ${JSON.stringify(name)}: ${was.mode} → ${rule.mode}`);
      if (was.data !== rule.data) out.push(`rule ${JSON.stringify(name)} changed (${rule.mode})`);
    }
  }
  for (const [name, rule] of old)
    if (!now.has(name)) out.push(`rule ${JSON.stringify(name)} removed (was ${rule.mode})`);
  const order = (names: Iterable<string>) => [...names].filter((n) => old.has(n) && now.has(n)).join('\n');
  if (order(old.keys()) !== order(now.keys())) out.push('rules reordered (the first rule that matches decides)');
  for (const key of ['agents', 'tenants', 'scopes', 'limits'] as const)
    if (!same(before.data[key], after.data[key])) out.push(`${key} changed`);
  if (!same(before.data.gateway?.upstreams, after.data.gateway?.upstreams))
    out.push('gateway.upstreams changed: takes effect when the gateway restarts');
  if (!same(before.data.tools, after.data.tools))
    out.push('tools (metadata, parameter schemas) changed: takes effect when the gateway restarts');
  return out;
}
