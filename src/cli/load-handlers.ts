import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RegisterHandlers } from '../payhooks.js';

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
