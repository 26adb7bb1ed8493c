/**
 * Tools from MCP servers, registered in a ToolRegistry under a namespace so that every call to them
 * passes the same gate as a native tool's. The server may be of either era (client.ts).
 */
import type {
  CallToolRequestOptions,
  CallToolResult,
  Client,
  Tool as McpTool,
  ToolAnnotations,
} from '@modelcontextprotocol/client';
import { releasesSignal } from '../gate/index.js';
import { canonical, declaredName, describe } from '../names.js';
import { ToolRegistry } from '../registry.js';
import {
  compileValidator,
  declaredDialect,
  type JsonSchema,
  type ValidationResult,
  type Validator,
} from '../schema.js';
import { defineTool, ToolTag, type Tool, type ToolMetadataInput } from '../tool.js';
import { connectClient, newClient, type ConnectClientOptions, type McpSession } from './client.js';
import type { McpEraViolationListener } from './era.js';
import { listBounded } from './listing.js';
import type { McpEndpoint } from './transport.js';

/** Options of {@link connectMcpServer}; give exactly one of `client`, `transport`, `stdio`, `url`. */
export interface McpServerOptions extends McpEndpoint {
  /**
   * A Client of the MCP SDK v2 (`@modelcontextprotocol/client`), connected or not (it is connected here
   * when not, with its own `versionNegotiation`: the SDK's default is `'legacy'`, so build it with
   * `{ versionNegotiation: { mode: 'auto' } }` to reach 2026-07-28 servers). A v1 Client is refused
   * with a TypeError: pass its transport as `transport` instead.
   */
  readonly client?: Client;
  /**
   * The namespace the server's tools are registered under: `github` registers `search` as `github:search`,
   * so that it collides neither with a native `search` nor with another server's. `null` registers the
   * server's own names (the gateway does this: it fronts one server). @default 'mcp'
   */
  readonly prefix?: string | null;
  /**
   * Whether the server's tool annotations are believed. For an untrusted server (the default) every hint
   * is taken at the MCP spec's default: not read-only, destructive, open world (tags `destructive` and
   * `network`), whatever the server claims. @default false
   */
  readonly trusted?: boolean;
  /**
   * Local metadata per server tool name (without the prefix), matched by canonical form (`Delete_Repo`
   * applies to `delete_repo`); what it states replaces what annotations gave. @default {}
   */
  readonly metadata?: Readonly<Record<string, ToolMetadataInput>>;
  /**
   * Extra JSON Schemas for the arguments per server tool name (without the prefix), matched by canonical
   * form: a call must satisfy the server's `inputSchema` and this one (the gateway passes the policy
   * file's `parameters`, so that it refuses what `toolgate explain` refuses). @default {}
   */
  readonly parameters?: Readonly<Record<string, JsonSchema>>;
  /** What a successful call returns: the text of its content (for models) or the whole CallToolResult. @default 'text' */
  readonly output?: 'text' | 'result';
  /** The client's name towards the server. @default 'toolgate' */
  readonly clientName?: string;
  /** How long connecting (the era probe, the handshake) may take. @default 10_000 */
  readonly connectTimeoutMs?: number;
  /**
   * Hears of every answer the server gave in an era it did not announce (the call it answered fails with
   * a protocol error either way). @default a process warning `TOOLGATE_MCP_ERA`
   */
  readonly onEraViolation?: McpEraViolationListener;
}

/** A connected server whose tools are in the registry. */
export interface McpConnection {
  readonly client: Client;
  /** The server's era and protocol version, as negotiated at connect. */
  readonly session: McpSession;
  /** The registered names of the server's tools, now. */
  readonly tools: readonly string[];
  /** The server's own definition of a registered tool (by registered name). */
  definition(registeredName: string): McpTool | undefined;
  /** Tools the server offered that could not be registered (bad name or schema), with why. */
  readonly skipped: readonly { readonly tool: string; readonly reason: string }[];
  /** Lists the server's tools again and brings the registry in line (done on every tools/list_changed). */
  refresh(): Promise<void>;
  /** Subscribes to changes of the tool list; returns the unsubscribe function. */
  onToolsChanged(listener: (tools: readonly string[]) => void): () => void;
  /** Unregisters the tools and closes the connection (a stdio server is stopped). */
  close(): Promise<void>;
}

/** The error a call to an MCP tool ends with when the server answers with `isError: true`. */
export class McpToolError extends Error {
  override name = 'McpToolError';
  readonly result: CallToolResult;
  constructor(tool: string, result: CallToolResult) {
    super(contentText(result) || `the MCP tool ${JSON.stringify(tool)} reported an error`);
    this.result = result;
  }
}

/**
 * Connects to an MCP server and registers its tools in `registry` under a namespace. Tool calls then go
 * through the registry, and so through the gate: the allowlist, the policy on the arguments validated
 * against the tool's `inputSchema` (Ajv), approvals. `tools/list_changed` is tracked.
 *
 * @example
 * const github = await connectMcpServer(registry, { stdio: { command: 'github-mcp' }, prefix: 'github' });
 * await registry.invoke('github:search', { q: 'toolgate' }, { agent: { name: 'dev', tools: ['github:search'] } });
 */
export function connectMcpServer(registry: ToolRegistry, options: McpServerOptions): Promise<McpConnection> {
  return connectTools(registry, options, false);
}

/**
 * {@link connectMcpServer} for the gateway's own upstream client (not part of `toolgate/mcp`), which drops a
 * call's signal once the call settled: its tools are marked for the gate's controller pool
 * (gate/controller-pool.ts), so a finished gateway call's AbortController may serve a later one. The mark is this
 * entry, never a key read off `options`: no options object a user builds (a Proxy included) can carry it.
 */
export function connectUpstreamServer(registry: ToolRegistry, options: McpServerOptions): Promise<McpConnection> {
  return connectTools(registry, options, true);
}

/** Both entries: `releasing` marks the tools for the controller pool (the gateway's only). */
async function connectTools(
  registry: ToolRegistry,
  options: McpServerOptions,
  releasing: boolean,
): Promise<McpConnection> {
  if (!(registry instanceof ToolRegistry))
    throw new TypeError(`connectMcpServer expects a ToolRegistry, got ${describe(registry)}`);
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`connectMcpServer options must be an object, got ${describe(options)}`);
  const sources = (['client', 'transport', 'stdio', 'url'] as const).filter((k) => options[k] !== undefined);
  if (sources.length !== 1)
    throw new TypeError(
      `connectMcpServer needs exactly one of the options "client", "transport", "stdio", "url"; got ${sources.length === 0 ? 'none' : sources.join(', ')}`,
    );
  const prefix = options.prefix === undefined ? 'mcp' : options.prefix;
  if (prefix !== null && (typeof prefix !== 'string' || prefix.trim() === '' || prefix.includes(':'))) {
    throw new TypeError(`option "prefix" must be a non-empty string without ":" or null, got ${describe(prefix)}`);
  }
  const trusted = options.trusted ?? false;
  if (typeof trusted !== 'boolean') throw new TypeError(`option "trusted" must be a boolean, got ${describe(trusted)}`);
  const output = options.output ?? 'text';
  if (output !== 'text' && output !== 'result')
    throw new TypeError(`option "output" must be 'text' or 'result', got ${describe(output)}`);
  const overrides = options.metadata ?? {};
  const metadataOf = byCanonicalName(overrides, 'metadata');
  const parametersOf = byCanonicalName(options.parameters ?? {}, 'parameters');

  const client = options.client ?? newClient(options.clientName ?? 'toolgate', {}, options.connectTimeoutMs ?? 10_000);
  const connect: ConnectClientOptions = {
    ...(options.connectTimeoutMs !== undefined ? { timeoutMs: options.connectTimeoutMs } : {}),
    onViolation:
      options.onEraViolation ??
      ((violation) => process.emitWarning(`toolgate: MCP server: ${violation.detail}`, { code: 'TOOLGATE_MCP_ERA' })),
  };
  const session = await connectClient(client, options, connect);

  // Keyed by the canonical form of the registered name, so every look-up by name is by canonical form.
  const registered = new Map<string, { tool: Tool; definition: McpTool; fingerprint: string }>();
  let skipped: { tool: string; reason: string }[] = [];
  const listeners = new Set<(tools: readonly string[]) => void>();
  let closed = false;
  let syncing: Promise<void> = Promise.resolve();

  const sync = async (): Promise<void> => {
    // Without a cursor the SDK walks every page itself and keeps the list as its tool index (for `x-mcp-header`
    // mirroring and output validation); 'refresh' always asks the server. At most MAX_LIST_PAGES pages and
    // MAX_LIST_ITEMS tools (listing.ts; within the SDK's walk, connectClient's listingTap refuses the page past the
    // items), else an Error: at connect the server is refused, on a refresh the tools stay.
    const offered = await listBounded(
      'tools/list',
      (cursor) => client.listTools(cursor === undefined ? undefined : { cursor }, { cacheMode: 'refresh' }),
      (page) => page.tools,
    );
    if (closed) return;
    const nextSkipped: { tool: string; reason: string }[] = [];
    const seen = new Set<string>();
    for (const definition of offered) {
      const name = prefix === null ? definition.name : `${prefix}:${definition.name}`;
      let key: string;
      try {
        // A declared name's checks first (its length: a name past NAME_LENGTH_MAX is not kept in `seen`, whose
        // names V8 compares with each other past 16,383 characters), as registering it would.
        key = declaredName(name, 'MCP tool');
      } catch (error) {
        nextSkipped.push({ tool: String(definition.name), reason: (error as Error).message });
        continue;
      }
      seen.add(key);
      const override = metadataOf(definition.name);
      const extra = parametersOf(definition.name);
      const fingerprint = JSON.stringify([definition, override ?? null, extra ?? null]);
      const current = registered.get(key);
      if (current?.fingerprint === fingerprint) continue;
      if (current) {
        registry.unregister(current.tool.name);
        registered.delete(key);
      }
      try {
        const made = mcpTool(client, definition, name, { trusted, output, override, extra });
        const tool = registry.register(releasing ? releasesSignal(made) : made);
        registered.set(key, { tool, definition, fingerprint });
      } catch (error) {
        nextSkipped.push({ tool: definition.name, reason: error instanceof Error ? error.message : String(error) });
      }
    }
    for (const [key, entry] of [...registered]) {
      if (seen.has(key)) continue;
      registry.unregister(entry.tool.name);
      registered.delete(key);
    }
    skipped = nextSkipped;
    for (const problem of nextSkipped) {
      process.emitWarning(`toolgate: MCP tool ${describe(problem.tool)} was not registered: ${problem.reason}`, {
        code: 'TOOLGATE_MCP_TOOL_SKIPPED',
      });
    }
    const names = [...registered.values()].map((r) => r.tool.name);
    for (const listener of listeners) listener(names);
  };
  const refresh = (): Promise<void> => {
    syncing = syncing.then(sync, sync);
    return syncing;
  };

  client.setNotificationHandler('notifications/tools/list_changed', async () => {
    await refresh().catch((error: unknown) => {
      process.emitWarning(
        `toolgate: refreshing the MCP tool list failed: ${error instanceof Error ? error.message : String(error)}`,
        { code: 'TOOLGATE_MCP_REFRESH' },
      );
    });
  });
  try {
    await refresh();
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }

  return {
    client,
    session,
    get tools() {
      return [...registered.values()].map((r) => r.tool.name);
    },
    get skipped() {
      return skipped;
    },
    definition: (name) => (typeof name === 'string' ? registered.get(canonical(name))?.definition : undefined),
    refresh,
    onToolsChanged(listener) {
      if (typeof listener !== 'function')
        throw new TypeError(`onToolsChanged expects a function, got ${describe(listener)}`);
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const entry of registered.values()) registry.unregister(entry.tool.name);
      registered.clear();
      await client.close();
    },
  };
}

/**
 * The tags an MCP tool gets from its annotations. Hints of an untrusted server, and missing hints, take
 * the spec's defaults: readOnlyHint false, destructiveHint true, openWorldHint true.
 */
export function annotationTags(
  annotations: ToolAnnotations | undefined,
  trusted: boolean,
): { tags: ToolTag[]; customTags: string[] } {
  const hints = trusted ? (annotations ?? {}) : {};
  const tags: ToolTag[] = [];
  const customTags = ['mcp'];
  if (hints.readOnlyHint === true) tags.push(ToolTag.READ_ONLY);
  // destructiveHint is meaningful only when the tool is not read-only.
  else if (hints.destructiveHint !== false) tags.push(ToolTag.DESTRUCTIVE);
  if (hints.openWorldHint !== false) tags.push(ToolTag.NETWORK);
  if (hints.idempotentHint === true) customTags.push('idempotent');
  return { tags, customTags };
}

/**
 * A look-up by canonical form into an object keyed by tool name. Two keys with one canonical form are a
 * TypeError (which one applies would depend on key order).
 */
function byCanonicalName<T>(record: Readonly<Record<string, T>>, option: string): (name: string) => T | undefined {
  if (typeof record !== 'object' || record === null)
    throw new TypeError(`option "${option}" must be an object keyed by tool name, got ${describe(record)}`);
  const map = new Map<string, { name: string; value: T }>();
  for (const [name, value] of Object.entries(record)) {
    const form = canonical(name);
    const other = map.get(form);
    if (other)
      throw new TypeError(
        `option "${option}": ${JSON.stringify(other.name)} and ${JSON.stringify(name)} have one canonical form ${JSON.stringify(form)}; give one`,
      );
    map.set(form, { name, value });
  }
  return (name) => (typeof name === 'string' ? map.get(canonical(name))?.value : undefined);
}

function mcpTool(
  client: Client,
  definition: McpTool,
  name: string,
  options: {
    trusted: boolean;
    output: 'text' | 'result';
    override: ToolMetadataInput | undefined;
    extra: JsonSchema | undefined;
  },
): Tool {
  const tool = mcpToolOwn(client, definition, name, options);
  if (options.extra === undefined) return tool;
  // Both schemas: the server's first (so its own refusals read as before), then the extra one on its output.
  let more: Validator;
  try {
    more = compileValidator(options.extra);
  } catch (cause) {
    throw new TypeError(
      `the extra JSON Schema for ${JSON.stringify(name)} does not compile: ${(cause as Error).message}`,
    );
  }
  const then = (result: ValidationResult): ValidationResult | Promise<ValidationResult> =>
    result.ok ? more(result.value) : result;
  const validate: Validator = (value) => {
    const result = tool.validate(value);
    return result instanceof Promise ? result.then(then) : then(result);
  };
  return Object.freeze({ ...tool, validate });
}

function mcpToolOwn(
  client: Client,
  definition: McpTool,
  name: string,
  options: { trusted: boolean; output: 'text' | 'result'; override: ToolMetadataInput | undefined },
): Tool {
  const fromAnnotations = annotationTags(definition.annotations, options.trusted);
  // The MCP spec's default dialect is 2020-12; the registry's Ajv compiles the keywords, the $schema URI is dropped.
  // Once it names a dialect toolgate reads: without it, a draft-03 schema was read as draft-07, its `divisibleBy`
  // and `disallow` ignored (half read; the MCP spec: an unsupported dialect is an error). Such a tool is skipped.
  const { $schema: dialect, ...schema } = definition.inputSchema as JsonSchema;
  if (dialect !== undefined) declaredDialect(dialect);
  return defineTool({
    name,
    description: definition.description ?? definition.annotations?.title ?? '',
    parameters: schema,
    metadata: { tags: fromAnnotations.tags, customTags: fromAnnotations.customTags, ...options.override },
    execute: async (args, execution) => {
      // The definition registered is the one the SDK mirrors `x-mcp-header` parameters from and validates
      // structured output against, whatever its cache holds. The gate's call id goes with it: the gateway's
      // client finds the client request the call is for by it (gateway/upstream-client.ts); an SDK Client
      // reads no such option.
      const sent: CallToolRequestOptions & { readonly callId: string } = {
        signal: execution.signal,
        toolDefinition: definition,
        callId: execution.callId,
      };
      const result = await client.callTool({ name: definition.name, arguments: args }, sent);
      if (result.isError === true) throw new McpToolError(definition.name, result);
      return options.output === 'result' ? result : contentText(result);
    },
  });
}

/** The text of a tool result: text blocks joined; other blocks named; structured content when there is no text. */
export function contentText(result: CallToolResult): string {
  const parts: string[] = [];
  for (const block of result.content ?? []) {
    if (block.type === 'text') parts.push(block.text);
    else if (block.type === 'resource_link') parts.push(`[resource ${block.uri}]`);
    else if (block.type === 'resource')
      parts.push('text' in block.resource ? String(block.resource.text) : `[resource ${block.resource.uri}]`);
    else parts.push(`[${block.type}${'mimeType' in block ? ` ${String(block.mimeType)}` : ''}]`);
  }
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return parts.join('\n');
}
