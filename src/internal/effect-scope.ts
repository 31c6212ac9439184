import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The step a `ctx.effect` function is running in, as the outgoing calls made inside it see it: the payhooks API
 * client and a connector's `ctx.http` take their idempotency keys from it, so that a call inside a step is keyed by
 * the step (the same key on every attempt of the event) without the handler passing it along.
 */
export interface EffectScope {
  /** The step's idempotency key. */
  readonly key: string;
  /**
   * Called before the first keyed request of the step goes out: records that the step's outside calls carry its key
   * (so an unknown outcome is retried with it rather than held for review). Resolves once recorded.
   */
  readonly keyed: () => Promise<void>;
}

const storage = new AsyncLocalStorage<{ scope: EffectScope; requests: number; keyed?: Promise<void> }>();

/** Runs `fn` inside the step `scope`: keyed requests made anywhere under it take their keys from it. */
export function runInEffectScope<T>(scope: EffectScope, fn: () => T): T {
  return storage.run({ scope, requests: 0 }, fn);
}

/**
 * The idempotency key for the next keyed request of the step running now, or undefined outside any step. The first
 * request gets the step's key, the second `<key>.2`, and so on: a function that calls in the same order on every
 * attempt sends each call with the same key every time, and two different calls never share one. Resolves once the
 * step is recorded as keyed.
 */
export async function nextEffectKey(): Promise<string | undefined> {
  const current = storage.getStore();
  if (!current) return undefined;
  current.requests += 1;
  current.keyed ??= current.scope.keyed();
  await current.keyed;
  return current.requests === 1 ? current.scope.key : `${current.scope.key}.${current.requests}`;
}

/** Whether a `ctx.effect` step is running in this async context. */
export function inEffectScope(): boolean {
  return storage.getStore() !== undefined;
}
