import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { RegisterHandlers } from '../payhooks.js';

/** Where a handlers module is, as an absolute path: `module` is a path (relative to the working directory) or a file URL. */
export function handlersModulePath(module: string | URL): string {
  if (module instanceof URL || module.startsWith('file:')) return fileURLToPath(module);
  return isAbsolute(module) ? module : resolve(module);
}

/**
 * Imports a handlers module (a path relative to the working directory, or a file URL) and returns its register
 * function: the default export, or a named export `register`.
 */
export async function loadHandlers(module: string | URL): Promise<RegisterHandlers> {
  const url = pathToFileURL(handlersModulePath(module)).href;
  let loaded: { default?: unknown; register?: unknown };
  try {
    loaded = (await import(url)) as typeof loaded;
  } catch (cause) {
    throw new Error(`Could not load the handlers module ${String(module)}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
  }
  const register = loaded.default ?? loaded.register;
  if (typeof register !== 'function') {
    throw new Error(
      `The handlers module ${String(module)} must export a function (default or \`register\`) that takes the payhooks instance.`,
    );
  }
  return register as RegisterHandlers;
}
