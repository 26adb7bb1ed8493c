/**
 * The bounds of an MCP server's paged listings (`tools/list`, `prompts/list`, `resources/list`,
 * `resources/templates/list`): a server may answer every page with another cursor, or put any number of items in
 * one. Past either bound the listing fails with an Error naming it, and nothing of it is kept (fail closed: a
 * listing cut short would serve an arbitrary part of it). The SDK walks a listing asked without a cursor itself:
 * {@link listingTap}, on every client's transport, holds that walk to the item bound page by page.
 */
import { SdkErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/client';

/**
 * The most pages of one listing: toolgate's clients walk at most this many (the SDK walks the pages of a listing
 * asked without a cursor itself, up to its `listMaxPages`, which client.ts's `clientOptions` sets to this), and
 * {@link listBounded} asks at most this many.
 */
export const MAX_LIST_PAGES = 64;

/** The most items (tools, prompts, resources, templates) one listing of one server may hold. */
export const MAX_LIST_ITEMS = 10_000;

/**
 * Every item of a paged listing, page by page (`page(cursor)`, undefined for the first), within
 * {@link MAX_LIST_PAGES} pages and {@link MAX_LIST_ITEMS} items; past either, an Error naming the bound.
 */
export async function listBounded<P extends { nextCursor?: string | undefined }, T>(
  method: string,
  page: (cursor: string | undefined) => Promise<P>,
  itemsOf: (page: P) => readonly T[],
): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    if (pages === MAX_LIST_PAGES) throw pastPages(method);
    let answer: P;
    try {
      answer = await page(cursor);
    } catch (error) {
      // The SDK's own walk stopped at its listMaxPages (MAX_LIST_PAGES for toolgate's clients): named as ours.
      if ((error as { code?: unknown } | null)?.code === SdkErrorCode.ListPaginationExceeded)
        throw pastPages(method, error);
      // The page that passed a bound within the SDK's walk, refused by listingTap: named as ours.
      const past = (error as { data?: { [PAST_BOUND]?: unknown } } | null)?.data?.[PAST_BOUND];
      if (past === 'items') throw pastItems(method, error);
      if (past === 'pages') throw pastPages(method, error);
      throw error;
    }
    pages++;
    const more = itemsOf(answer);
    if (items.length + more.length > MAX_LIST_ITEMS) throw pastItems(method);
    for (const item of more) items.push(item);
    cursor = answer.nextCursor;
  } while (cursor !== undefined);
  return items;
}

function pastItems(method: string, cause?: unknown): Error {
  return new Error(
    `${method}: the server listed more than ${MAX_LIST_ITEMS.toLocaleString('en-US')} items (MAX_LIST_ITEMS); none is kept`,
    cause === undefined ? undefined : { cause },
  );
}

function pastPages(method: string, cause?: unknown): Error {
  return new Error(
    `${method}: the server's pages went on past ${MAX_LIST_PAGES} (MAX_LIST_PAGES); none is kept`,
    cause === undefined ? undefined : { cause },
  );
}

/** The key of the refusal's `data` that marks a page refused by {@link listingTap}: `'items'` or `'pages'`. */
const PAST_BOUND = 'toolgateListBound';

/** The list of each paged listing method in its answer. */
const LIST_ITEMS: ReadonlyMap<string, string> = new Map([
  ['tools/list', 'tools'],
  ['prompts/list', 'prompts'],
  ['resources/list', 'resources'],
  ['resources/templates/list', 'resourceTemplates'],
]);

/** The most listing requests awaiting their answer, and the most cursors, a tap keeps (the oldest goes first). */
const TAP_ENTRIES = 4 * MAX_LIST_PAGES;

/**
 * The bounds inside the SDK's own walk. Asked without a cursor, the SDK's `listTools`, `listPrompts`,
 * `listResources` and `listResourceTemplates` walk every page themselves (up to `listMaxPages`) before returning
 * one aggregate (which is also the SDK's tool index, for output validation and `x-mcp-header` mirroring, and what
 * its own refetch after a header mismatch walks): {@link listBounded} sees the items only then. This tap, on the
 * client's transport, counts the items of a listing as its pages arrive, a page asked with a cursor continuing the
 * count of the page that gave the cursor; the answer that takes the count past {@link MAX_LIST_ITEMS} is replaced,
 * before the SDK parses it, by an error naming the bound, so the walk stops there: at most MAX_LIST_ITEMS items
 * and one page are taken in. Its pages are counted the same, the page past {@link MAX_LIST_PAGES} refused (the
 * SDK stops toolgate's clients there first; a Client given with `listMaxPages: 0` would walk without end). A cursor
 * the tap does not know (one dropped past TAP_ENTRIES) counts from 0, and {@link listBounded}
 * still bounds the whole.
 */
export function listingTap(): {
  readonly outbound: (message: JSONRPCMessage) => void;
  readonly inbound: (message: JSONRPCMessage) => JSONRPCMessage | undefined;
} {
  // A request's id → its method and the items and pages listed before its page; `method cursor` → the same (the
  // latest counts a page giving that cursor reached: a server's cursors reused across listings count the same).
  const asked = new Map<string | number, { method: string; items: number; pages: number }>();
  const cursors = new Map<string, { items: number; pages: number }>();
  const keep = <K, V>(map: Map<K, V>, key: K, value: V): void => {
    map.delete(key);
    if (map.size >= TAP_ENTRIES) map.delete(map.keys().next().value as K);
    map.set(key, value);
  };
  return {
    outbound: (message) => {
      const body = message as Record<string, unknown>;
      const id = body['id'];
      const method = body['method'];
      if ((typeof id !== 'string' && typeof id !== 'number') || typeof method !== 'string') return;
      if (!LIST_ITEMS.has(method)) return;
      const cursor = (body['params'] as { cursor?: unknown } | null | undefined)?.cursor;
      const before = typeof cursor === 'string' ? cursors.get(`${method} ${cursor}`) : undefined;
      keep(asked, id, { method, items: before?.items ?? 0, pages: before?.pages ?? 0 });
    },
    inbound: (message) => {
      const body = message as Record<string, unknown>;
      const id = body['id'];
      if ((typeof id !== 'string' && typeof id !== 'number') || 'method' in body) return undefined;
      const request = asked.get(id);
      if (request === undefined) return undefined;
      asked.delete(id);
      const result = body['result'] as Record<string, unknown> | null | undefined;
      const items = result?.[LIST_ITEMS.get(request.method)!];
      if (!Array.isArray(items)) return undefined;
      const count = { items: request.items + items.length, pages: request.pages + 1 };
      const past = count.items > MAX_LIST_ITEMS ? 'items' : count.pages > MAX_LIST_PAGES ? 'pages' : undefined;
      if (past !== undefined) {
        const message = (past === 'items' ? pastItems : pastPages)(request.method).message;
        return { jsonrpc: '2.0', id, error: { code: -32603, message, data: { [PAST_BOUND]: past } } } as JSONRPCMessage;
      }
      const next = result?.['nextCursor'];
      if (typeof next === 'string') keep(cursors, `${request.method} ${next}`, count);
      return undefined;
    },
  };
}
