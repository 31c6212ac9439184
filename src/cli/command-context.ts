import type { EnvCommand, EnvOf } from './env.js';

/** What a command module needs from the program: where to print, and the environment it reads. */
export interface CommandContext {
  /** Prints a result line (stdout). */
  out(text: string): void;
  /** Prints a note, a warning or progress (stderr), so that stdout stays a clean result. */
  err(text: string): void;
  /** The checked environment of a command, read once per run. */
  env<C extends EnvCommand>(command: C): EnvOf<C>;
}
