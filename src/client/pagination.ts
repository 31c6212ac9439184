import { z } from 'zod';
import { listPageSchema, PAGE_SIZE, type ListPage } from '../events/rest-contract.js';
import { ApiResponseValidationError } from './errors.js';

/**
 * The schema of one page: `{data, total?, take?, skip?}` (unknown fields kept), or a bare array of items,
 * which is read as `{data: items}`.
 */
export function pageSchema<Item extends z.ZodType>(item: Item) {
  return z.preprocess((value) => (Array.isArray(value) ? { data: value } : value), listPageSchema(item));
}

/** Pages whose ids a walk remembers to tell a repeated page: enough for a service that ignores `skip`, bounded in memory. */
const REMEMBERED_PAGES = 10;

/**
 * Tells pages that bring nothing new: a non-empty page whose every id was on one of the last pages read. Offset
 * paging over a list kept oldest first never does that (a deleted record shifts later ones by one, not a page),
 * but a service that ignores `skip` answers the first page again and again, and a walk would never end.
 */
export class RepeatedPages {
  readonly #recent: Set<string>[] = [];

  /** True when every id of `ids` was on a recent page; the page is remembered either way. */
  repeats(ids: readonly string[]): boolean {
    const repeated = ids.length > 0 && ids.every((id) => this.#recent.some((page) => page.has(id)));
    this.#recent.push(new Set(ids));
    if (this.#recent.length > REMEMBERED_PAGES) this.#recent.shift();
    return repeated;
  }
}

/** A list's walk stopped on a page that brought nothing new: the service seems to ignore `skip`. */
export class RepeatedPageError extends ApiResponseValidationError {
  constructor(
    readonly skip: number,
    readonly requests: number,
    firstId: string,
  ) {
    super(
      `The list page at skip=${skip} holds only records already read (the first: ${firstId}): the service seems to ignore skip. ` +
        `The walk stopped after ${requests} requests rather than read the same records again.`,
      [],
    );
  }
}

/**
 * Walks every page from `skip` on with the largest page size (100), yielding items one by one. Stops at the
 * first page shorter than asked for, or when `total` (if the service gives it) is reached, so 250 records
 * take exactly three requests. A page that brings nothing new (every id already read) throws a
 * {@link RepeatedPageError} instead of going on forever.
 */
export async function* iteratePages<T extends { id: string }>(
  fetchPage: (page: { take: number; skip: number }) => Promise<ListPage<T>>,
  startAt = 0,
): AsyncGenerator<T, void, undefined> {
  let skip = startAt;
  let requests = 0;
  const repeated = new RepeatedPages();
  for (;;) {
    const take: number = PAGE_SIZE.max;
    const page = await fetchPage({ take, skip });
    requests++;
    if (repeated.repeats(page.data.map((item) => item.id))) throw new RepeatedPageError(skip, requests, page.data[0]!.id);
    yield* page.data;
    skip += page.data.length;
    // A service that echoes a smaller page size than asked for is honoured, so its full pages do not end the walk.
    const pageSize = Math.min(take, page.take ?? take);
    if (page.data.length === 0 || page.data.length < pageSize) return;
    if (page.total !== null && page.total !== undefined && skip >= page.total) return;
  }
}
