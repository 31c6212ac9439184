import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ApiClient } from '../client/index.js';
import type { Payhooks } from '../payhooks.js';

/**
 * What a `--handlers` module exports: a function that registers handlers on the instance. `ctx.api` is the
 * API client when `PAYHOOKS_API_KEY` is set, undefined otherwise.
 *
 * @example
 * const register: RegisterHandlers = (hooks) => {
 *   hooks.on('INVOICE_PAID', async (event, ctx) => {
 *     const invoice = await ctx.api?.invoices.get(event.data.invoiceId, { signal: ctx.signal });
 *   });
 * };
 * export default register;
 */
export type RegisterHandlers = (hooks: Payhooks<ApiClient>) => void | Promise<void>;

/**
 * Imports a handlers module (a path relative to the working directory) and returns its register function:
 * the default export, or a named export `register`.
 */
export async function loadHandlers(path: string): Promise<RegisterHandlers> {
  const url = pathToFileURL(resolve(path)).href;
  let module: { default?: unknown; register?: unknown };
  try {
    module = (await import(url)) as typeof module;
  } catch (cause) {
    throw new Error(`Could not load the handlers module ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  const register = module.default ?? module.register;
  if (typeof register !== 'function') {
    throw new Error(`The handlers module ${path} must export a function (default or \`register\`) that takes the payhooks instance.`);
  }
  return register as RegisterHandlers;
}
