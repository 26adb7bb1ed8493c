/**
 * Which upstream serves what: a tool by the name it is shown under (also while its upstream is down), a
 * resource by the upstream that listed its URI (else the one whose template matches it, else the only one
 * serving resources), a prompt by its namespace, a resource template by the upstream that listed it. A
 * name two upstreams could serve is refused, never guessed. The Router decides nothing about permission.
 */
import type { Client } from '@modelcontextprotocol/client';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import { ErrorCode, McpError, type Prompt, type Resource } from '@modelcontextprotocol/sdk/types.js';
import { listBounded, MAX_LIST_ITEMS } from '../mcp/index.js';
import { canonical, NAME_LENGTH_MAX } from '../names.js';
import { normalResourceUri } from '../policy-file/uri.js';
import type { CallScope, Upstream } from './upstream.js';

/**
 * The most tool names an upstream listed before its current listing that the Router remembers (by canonical form,
 * oldest forgotten first): enough for a call to a tool an upstream just dropped, or listed before it went down, to be
 * refused as that upstream's. One listing holds at most MAX_LIST_ITEMS; an upstream that listed fresh names at every
 * `tools/list_changed` kept every one of them (100 listings of 10,000: a million, each canonicalised again for every
 * call of an unknown name, 35.5 ms of CPU a call: atk-gwlist). A name forgotten is only refused as unknown.
 */
export const EARLIER_TOOLS_MAX = MAX_LIST_ITEMS;

/** One gateway's routing tables, filled as upstreams connect and list. */
export class Router {
  readonly upstreams: ReadonlyMap<string, Upstream>;
  /** Tool canonical name → the upstream listing it now (a down upstream's: its last listing). */
  readonly #toolOwner = new Map<string, Upstream>();
  /** Each upstream's current listing, by canonical form. */
  readonly #listedBy = new Map<Upstream, Set<string>>();
  /** Canonical forms an upstream listed before its current listing, oldest first, at most EARLIER_TOOLS_MAX. */
  readonly #earlierBy = new Map<Upstream, Set<string>>();
  /** Canonical form of a name listed before → the upstream that listed it last. */
  readonly #earlierOwner = new Map<string, Upstream>();
  /** Resource URI (normal form) → namespaces that listed it. */
  readonly #resourceOwners = new Map<string, Set<string>>();
  /** Each upstream's last `resources/list`, by namespace: the URIs it listed (normal form). */
  readonly #resourcesOf = new Map<string, Set<string>>();
  readonly #templatesOf = new Map<string, readonly UriTemplate[]>();
  readonly #promptsOf = new Map<string, ReadonlySet<string>>();

  constructor(upstreams: ReadonlyMap<string, Upstream>) {
    this.upstreams = upstreams;
  }

  /**
   * Records the tools an upstream serves now (at connect and at every `tools/list_changed`): its names are routed to
   * it, the names it no longer lists are no longer (remembered as its own up to EARLIER_TOOLS_MAX). A down upstream
   * (no connection) keeps its last listing: a call to one of its tools is refused as unavailable until it is back.
   */
  noteTools(upstream: Upstream): void {
    const connection = upstream.connection;
    if (!connection) return;
    const now = new Set<string>();
    for (const registered of connection.tools) now.add(canonical(registered));
    const before = this.#listedBy.get(upstream);
    this.#listedBy.set(upstream, now);
    const earlier = this.#earlierBy.get(upstream);
    for (const form of now) {
      this.#toolOwner.set(form, upstream);
      if (earlier?.delete(form) && this.#earlierOwner.get(form) === upstream) this.#earlierOwner.delete(form);
    }
    if (before === undefined) return;
    for (const form of before) {
      if (now.has(form)) continue;
      if (this.#toolOwner.get(form) === upstream) {
        this.#toolOwner.delete(form);
        // Another upstream listing it now (a name two upstreams list: the registry keeps one) is its owner.
        for (const [other, listed] of this.#listedBy)
          if (listed.has(form)) {
            this.#toolOwner.set(form, other);
            break;
          }
      }
      this.#rememberEarlier(upstream, form);
    }
  }

  /** Remembers a name an upstream no longer lists, forgetting its oldest past EARLIER_TOOLS_MAX. */
  #rememberEarlier(upstream: Upstream, form: string): void {
    let earlier = this.#earlierBy.get(upstream);
    if (!earlier) this.#earlierBy.set(upstream, (earlier = new Set()));
    earlier.delete(form); // re-added last: the most recent
    earlier.add(form);
    this.#earlierOwner.set(form, upstream);
    if (earlier.size <= EARLIER_TOOLS_MAX) return;
    const oldest = earlier.values().next().value as string;
    earlier.delete(oldest);
    if (this.#earlierOwner.get(oldest) === upstream) this.#earlierOwner.delete(oldest);
  }

  /** The upstream a tool is listed for (ready upstreams' tools), if any. */
  listedOwner(form: string): Upstream | undefined {
    return this.#toolOwner.get(form);
  }

  /**
   * The upstream serving a tool name (also while it is down), if any: the one listing it now, else the prefixed
   * upstream of its namespace, else the one that listed it before (within EARLIER_TOOLS_MAX). Map look-ups and a
   * loop over the upstreams, whatever the upstreams listed.
   */
  ownerOfTool(toolName: string): Upstream | undefined {
    const form = canonical(toolName);
    const owner = this.#toolOwner.get(form);
    if (owner) return owner;
    for (const upstream of this.upstreams.values())
      if (upstream.prefixed && upstream.own(form) !== undefined && form.startsWith(`${canonical(upstream.namespace)}:`))
        return upstream;
    return this.#earlierOwner.get(form);
  }

  /**
   * A tool name whose namespace is a prefixed upstream's may only be served by that upstream: an
   * unprefixed upstream offering `fs:write_file` must not pass for the `fs` upstream (and its rules).
   */
  impostor(registered: string, owner: Upstream): boolean {
    const form = canonical(registered);
    const colon = form.indexOf(':');
    if (colon < 0) return false;
    // The first prefixed upstream of that namespace (a loop: no array per call; `tools/call` and every listed
    // tool of `tools/list` ask).
    const namespace = form.slice(0, colon);
    for (const u of this.upstreams.values()) if (u.prefixed && canonical(u.namespace) === namespace) return u !== owner;
    return false;
  }

  /**
   * Every item of one list method from every ready upstream that serves it (the method's capability), page by
   * page, each page asked in `scope` (the downstream request's; undefined: the gateway's own): `list` is the
   * client's method, `itemsOf` a page's list. An upstream past MAX_LIST_PAGES pages or MAX_LIST_ITEMS items
   * (src/mcp/listing.ts) lists nothing, with a warning, as one whose listing failed.
   */
  async listAll<P extends { nextCursor?: string | undefined }, T>(
    scope: CallScope | undefined,
    method: 'resources/list' | 'resources/templates/list' | 'prompts/list',
    list: (client: Client, params: { cursor?: string }, options: RequestOptions) => Promise<P>,
    itemsOf: (page: P) => T[],
  ): Promise<Map<Upstream, T[]>> {
    const out = new Map<Upstream, T[]>();
    await Promise.all(
      [...this.upstreams.values()].map(async (upstream) => {
        const capability = method === 'prompts/list' ? 'prompts' : 'resources';
        if (upstream.state !== 'ready' || !upstream.capabilities[capability]) return;
        try {
          // At most MAX_LIST_PAGES pages and MAX_LIST_ITEMS items (src/mcp/listing.ts), else this upstream's
          // listing fails as any other: nothing of it listed, a warning.
          const items = await listBounded(
            method,
            (cursor) =>
              upstream.forward(scope, () =>
                list(upstream.client!, cursor === undefined ? {} : { cursor }, upstream.requestOptions(scope)),
              ),
            itemsOf,
          );
          out.set(upstream, items);
        } catch (error) {
          // One upstream failing its listing does not fail the others' (it is reported once per listing).
          process.emitWarning(
            `toolgate gateway: ${method} of upstream "${upstream.namespace}" failed: ${error instanceof Error ? error.message : String(error)}`,
            { code: 'TOOLGATE_GATEWAY_LIST' },
          );
        }
      }),
    );
    return out;
  }

  /** Every upstream's resources, recording which upstream listed which URI; `scope` as {@link listAll}'s. */
  async listResources(scope?: CallScope): Promise<{ upstream: Upstream; resource: Resource; uri: string }[]> {
    const all = await this.listAll(
      scope,
      'resources/list',
      (client, params, options) => client.listResources(params, options),
      (page) => page.resources,
    );
    const out: { upstream: Upstream; resource: Resource; uri: string }[] = [];
    for (const [upstream, resources] of all) {
      const namespace = upstream.namespace;
      const now = new Set<string>();
      for (const resource of resources) {
        const normal = normalResourceUri(resource.uri);
        if (!normal.ok) continue;
        now.add(normal.uri);
        let owners = this.#resourceOwners.get(normal.uri);
        if (!owners) this.#resourceOwners.set(normal.uri, (owners = new Set()));
        owners.add(namespace);
        out.push({ upstream, resource, uri: normal.uri });
      }
      // The URIs it no longer lists are no longer routed to it (they were kept for ever: one listing of fresh URIs
      // at a time grew the table without bound, atk-gwlist); an upstream whose listing failed keeps its last.
      for (const uri of this.#resourcesOf.get(namespace) ?? []) {
        if (now.has(uri)) continue;
        const owners = this.#resourceOwners.get(uri);
        owners?.delete(namespace);
        if (owners?.size === 0) this.#resourceOwners.delete(uri);
      }
      this.#resourcesOf.set(namespace, now);
    }
    return out;
  }

  /** Records an upstream's resource templates (routing reads and completions by them). */
  noteTemplates(namespace: string, templates: readonly UriTemplate[]): void {
    this.#templatesOf.set(namespace, templates);
  }

  /**
   * Records the prompt names an upstream listed (routing an unprefixed upstream's prompts) and returns the prompts
   * kept: one named past NAME_LENGTH_MAX (1,024) characters, as a tool's, is neither listed nor kept (V8 hashes a
   * string past 16,383 characters by its length: 4,000 such names in one Set compared each with every other, ~20 s),
   * with one warning a listing.
   */
  notePrompts(namespace: string, prompts: readonly Prompt[]): Prompt[] {
    const kept = prompts.filter((prompt) => prompt.name.length <= NAME_LENGTH_MAX);
    if (kept.length !== prompts.length)
      process.emitWarning(
        `toolgate gateway: upstream "${namespace}" listed ${prompts.length - kept.length} prompts named past ${NAME_LENGTH_MAX.toLocaleString('en-US')} characters (NAME_LENGTH_MAX); not listed`,
        { code: 'TOOLGATE_GATEWAY_PROMPT_SKIPPED' },
      );
    this.#promptsOf.set(namespace, new Set(kept.map((prompt) => prompt.name)));
    return kept;
  }

  /**
   * The upstream serving a resource URI (normal form), or an McpError saying why none can; a listing it needs
   * is asked in `scope` (the downstream request's, as {@link listAll}'s).
   */
  async routeResource(uri: string, scope: CallScope | undefined): Promise<Upstream> {
    const pick = (namespaces: Iterable<string>): Upstream | undefined => {
      const found = [...namespaces].map((n) => this.upstreams.get(n)).filter((u): u is Upstream => u !== undefined);
      if (found.length > 1)
        throw new McpError(
          ErrorCode.InvalidParams,
          `toolgate gateway: the resource ${JSON.stringify(uri)} is served by several upstreams (${found.map((u) => u.namespace).join(', ')}); the gateway will not guess`,
        );
      return found[0];
    };
    const listed = this.#resourceOwners.get(uri);
    const byList = listed ? pick(listed) : undefined;
    if (byList) return byList;
    const byTemplate = pick(
      [...this.#templatesOf.entries()]
        .filter(([, templates]) => templates.some((t) => t.match(uri) !== null))
        .map(([n]) => n),
    );
    if (byTemplate) return byTemplate;
    const serving = [...this.upstreams.values()].filter((u) => u.state !== 'ready' || u.capabilities.resources);
    if (serving.length === 1) return serving[0]!;
    // Not seen yet: list once more, then decide.
    await this.listResources(scope);
    const again = this.#resourceOwners.get(uri);
    const found = again ? pick(again) : undefined;
    if (found) return found;
    throw new McpError(
      ErrorCode.InvalidParams,
      `toolgate gateway: no upstream is known to serve the resource ${JSON.stringify(uri)}`,
    );
  }

  /** The upstream serving a resource template (as it listed it), or an McpError. */
  routeTemplate(template: string): Upstream {
    const owners = [...this.#templatesOf.entries()].filter(([, ts]) => ts.some((t) => t.toString() === template));
    const found = owners.length === 1 ? this.upstreams.get(owners[0]![0]) : undefined;
    if (found) return found;
    const single = [...this.upstreams.values()].filter((u) => u.capabilities.resources);
    if (single.length === 1) return single[0]!;
    throw new McpError(
      ErrorCode.InvalidParams,
      `toolgate gateway: no upstream is known to serve the resource template ${JSON.stringify(template)}`,
    );
  }

  /** The upstream and own name of a prompt name as shown. */
  routePrompt(shown: string): { upstream: Upstream; own: string } {
    const candidates: { upstream: Upstream; own: string }[] = [];
    for (const upstream of this.upstreams.values()) {
      if (!upstream.prefixed) continue;
      const own = upstream.own(shown);
      if (own !== undefined) candidates.push({ upstream, own });
    }
    if (candidates.length === 0) {
      for (const upstream of this.upstreams.values())
        if (!upstream.prefixed && this.#promptsOf.get(upstream.namespace)?.has(shown))
          candidates.push({ upstream, own: shown });
    }
    if (candidates.length === 0) {
      const bare = [...this.upstreams.values()].filter(
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
  }
}

/** The error a request to a down upstream gets. */
export function unavailable(upstream: Upstream, what: string): McpError {
  return new McpError(
    ErrorCode.InternalError,
    `toolgate gateway: upstream "${upstream.namespace}" is unavailable (${upstream.reason}); ${what} is refused until it is back`,
  );
}
