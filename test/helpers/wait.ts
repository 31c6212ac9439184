/** Polls `check` until it returns true or `timeoutMs` passes; throws on timeout, naming `what`. */
export async function waitFor(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Polls `count` until it reaches `target`; throws, naming `what` and the count, once it has not moved for `stallMs` or
 * `maxMs` have passed. For work a busy machine slows but a stall stops: the wait lasts as long as progress does.
 */
export async function waitWhileProgressing(
  count: () => Promise<number>,
  target: number,
  what: string,
  { stallMs = 20_000, maxMs = 240_000 } = {},
): Promise<void> {
  const deadline = Date.now() + maxMs;
  let last = await count();
  let movedAt = Date.now();
  while (last < target) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await count();
    if (now !== last) [last, movedAt] = [now, Date.now()];
    if (Date.now() - movedAt > stallMs) throw new Error(`${what}: stalled at ${last} of ${target} for ${stallMs} ms`);
    if (Date.now() > deadline) throw new Error(`${what}: ${last} of ${target} after ${maxMs} ms`);
  }
}
