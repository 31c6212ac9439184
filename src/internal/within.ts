/**
 * `work`'s result, or `'timeout'` once `ms` have passed without one; the timer never outlives the race. The work
 * itself goes on (a caller that gives up on it must handle its outcome, e.g. `work.catch(() => undefined)`).
 *
 * @example
 * const outcome = await within(storeEvent(store, event), 8000);
 * if (outcome === 'timeout') return errorResponse(503, 'Storage did not answer in time.');
 */
export function within<T>(work: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
