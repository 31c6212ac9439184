import { PAGE_SIZE } from '../events/rest-contract.js';

/** One `{data, total, take, skip}` page of `items` (in their stored order, so offsets are stable). */
export function page<T>(
  items: readonly T[],
  query: { take?: number | undefined; skip?: number | undefined },
): { data: T[]; total: number; take: number; skip: number } {
  const take = query.take ?? PAGE_SIZE.default;
  const skip = query.skip ?? 0;
  return { data: items.slice(skip, skip + take), total: items.length, take, skip };
}
