import { PAGE_SIZE, webhookEventsQuerySchema } from '../events/api.js';

/** `take` (1–100, default 20) and `skip` (≥ 0, default 0): the query of every list endpoint. */
export const pageQuerySchema = webhookEventsQuerySchema.pick({ take: true, skip: true });

/** One `{data, total, take, skip}` page of `items` (in their stored order, so offsets are stable). */
export function page<T>(items: readonly T[], query: { take?: number | undefined; skip?: number | undefined }): { data: T[]; total: number; take: number; skip: number } {
  const take = query.take ?? PAGE_SIZE.default;
  const skip = query.skip ?? 0;
  return { data: items.slice(skip, skip + take), total: items.length, take, skip };
}
