import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { V8_FLAGS } from './cli.js';
import { waitFor } from './wait.js';

/** The repository's root, where the examples' READMEs say to run them. */
export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
// By URL, so that the child finds tsx whatever its working directory.
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** A running example and everything it printed so far (stdout and stderr together). */
export interface ExampleProcess {
  child: ChildProcess;
  output(): string;
  running(): boolean;
  /** Resolves with the exit code once the process has ended and its output is read. */
  exited: Promise<number | null>;
}

/**
 * Starts `examples/<file>` as its README does: `npx tsx examples/<file>` from the repository root, so tsconfig's
 * `paths` turn its `payhooks` imports into the sources. With another `cwd`, TSX_TSCONFIG_PATH keeps those paths.
 * `env` is laid over the test's environment; DATABASE_URL is blank (the embedded database) unless given.
 */
export function startExample(
  file: string,
  args: string[] = [],
  options: { cwd?: string; env?: Record<string, string> } = {},
): ExampleProcess {
  // V8's baseline compiler for the embedded database's WebAssembly, as for the CLI's processes (V8_FLAGS): 3.6 s of
  // CPU instead of 5.0 s for `month.ts --json`; it changes how fast that code runs, not what it does.
  const child = spawn(process.execPath, [...V8_FLAGS, '--import', tsx, join(repoRoot, 'examples', file), ...args], {
    cwd: options.cwd ?? repoRoot,
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: join(repoRoot, 'tsconfig.json'),
      DATABASE_URL: '',
      PAYHOOKS_LOG_LEVEL: 'info',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, output: () => output, running: () => child.exitCode === null && child.signalCode === null, exited };
}

/** Waits until the example prints `pattern` (its first group is returned), failing at once if it exits first. */
export async function waitForOutput(example: ExampleProcess, pattern: RegExp, what: string, timeoutMs = 30_000): Promise<string> {
  let found = '';
  await waitFor(
    () => {
      const match = pattern.exec(example.output());
      if (match) found = match[1] ?? match[0];
      else if (!example.running()) throw new Error(`the example exited before ${what}:\n${example.output()}`);
      return match !== null;
    },
    what,
    timeoutMs,
  );
  return found;
}

/** Sends SIGTERM and resolves with the exit code, or with a note if it is still running after `timeoutMs`. */
export function stopExample(example: ExampleProcess, timeoutMs = 15_000): Promise<number | null | string> {
  example.child.kill('SIGTERM');
  return Promise.race([
    example.exited,
    new Promise<string>((resolve) => setTimeout(() => resolve(`still running after ${timeoutMs / 1000} s`), timeoutMs)),
  ]);
}
