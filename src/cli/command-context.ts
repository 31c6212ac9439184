import type { EnvCommand, EnvOf } from '../service/environment.js';

/** What a command module needs from the program: where to print, and the environment it reads. */
export interface CommandContext {
  /**
   * Prints a result line (stdout). Resolves when the reader can take more; await it, so that a command printing
   * a lot goes at the reader's pace (the process waits for the rest before it exits). Never rejects.
   */
  out(text: string): Promise<void>;
  /** Prints a note, a warning or progress (stderr), so that stdout stays a clean result. Never rejects. */
  err(text: string): Promise<void>;
  /** The checked environment of a command, read once per run. */
  env<C extends EnvCommand>(command: C): EnvOf<C>;
}
