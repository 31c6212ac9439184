import { z } from 'zod';
import { listPageSchema, PAGE_SIZE, type ListPage } from '../events/rest-contract.js';

/**
 * The schema of one page: `{data, total?, take?, skip?}` (unknown fields kept), or a bare array of items,
 * which is read as `{data: items}`.
 */
export function pageSchema<Item extends z.ZodType>(item: Item) {
  return z.preprocess((value) => (Array.isArray(value) ? { data: value } : value), listPageSchema(item));
}

/**
 * Walks every page from `skip` on with the largest page size (100), yielding items one by one. Stops at the
 * first page shorter than asked for, or when `total` (if the service gives it) is reached, so 250 records
 * take exactly three requests.
 */
export async function* iteratePages<T>(
  fetchPage: (page: { take: number; skip: number }) => Promise<ListPage<T>>,
  startAt = 0,
): AsyncGenerator<T, void, undefined> {
  let skip = startAt;
  for (;;) {
    const take: number = PAGE_SIZE.max;
    const page = await fetchPage({ take, skip });
    yield* page.data;
    skip += page.data.length;
    // A service that echoes a smaller page size than asked for is honoured, so its full pages do not end the walk.
    const pageSize = Math.min(take, page.take ?? take);
    if (page.data.length === 0 || page.data.length < pageSize) return;
    if (page.total !== null && page.total !== undefined && skip >= page.total) return;
  }
}
