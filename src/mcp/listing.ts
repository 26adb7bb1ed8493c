/**
 * The bounds of an MCP server's paged listings (`tools/list`, `prompts/list`, `resources/list`,
 * `resources/templates/list`): a server may answer every page with another cursor, or put any number of items in
 * one. Past either bound the listing fails with an Error naming it, and nothing of it is kept (fail closed: a
 * listing cut short would serve an arbitrary part of it).
 */
import { SdkErrorCode } from '@modelcontextprotocol/client';

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
      throw error;
    }
    pages++;
    const more = itemsOf(answer);
    if (items.length + more.length > MAX_LIST_ITEMS)
      throw new Error(
        `${method}: the server listed more than ${MAX_LIST_ITEMS.toLocaleString('en-US')} items (MAX_LIST_ITEMS); none is kept`,
      );
    for (const item of more) items.push(item);
    cursor = answer.nextCursor;
  } while (cursor !== undefined);
  return items;
}

function pastPages(method: string, cause?: unknown): Error {
  return new Error(
    `${method}: the server's pages went on past ${MAX_LIST_PAGES} (MAX_LIST_PAGES); none is kept`,
    cause === undefined ? undefined : { cause },
  );
}
