import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { vi } from 'vitest';

const entry = fileURLToPath(new URL('../fixtures/cli.ts', import.meta.url));
const built = fileURLToPath(new URL('../../bin/payhooks.js', import.meta.url));
// By URL, so that the child finds tsx whatever its working directory.
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * V8's baseline compiler only, for the embedded database's WebAssembly in the processes the tests start: they live for
 * seconds, and optimising PostgreSQL's code in the background cost more CPU than they ran (`serve` on the embedded
 * database, started and stopped: 1.8 s of CPU, 1.0 s with this). It changes how fast that code runs, not what it does;
 * the CLI's own short commands set it for themselves (src/cli/main.ts), `serve` does not.
 */
export const V8_FLAGS: readonly string[] = ['--liftoff-only'];

/** The newest modification time of the files under `dir`, in ms (0 when it does not exist). */
function newest(dir: string): number {
  if (!existsSync(dir)) return 0;
  let latest = 0;
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) latest = Math.max(latest, statSync(join(dir, name)).mtimeMs);
  return latest;
}

/**
 * Whether dist/ was built after the last change to the sources (src/, handlers/, migrations/). Then the CLI runs from
 * it, as users run it, without tsx's loader, which costs about 0.7 s of CPU a process (`npm test` starts hundreds). A
 * stale or missing build is never used: the sources run through tsx, as before. `npm ci` builds (prepare), so CI is fresh.
 */
function isBuiltFresh(): boolean {
  const builtAt = existsSync(join(root, 'dist/cli/main.js')) ? statSync(join(root, 'dist/cli/main.js')).mtimeMs : 0;
  return builtAt > Math.max(...['src', 'handlers', 'migrations'].map((dir) => newest(join(root, dir))));
}
let builtIsFresh = isBuiltFresh();

/**
 * Builds dist/ (`npm run build`) when it is older than the sources, for the tests of the built package; a fresh build
 * is left alone. Rebuilding a fresh one rewrote every file of dist/ while processes of other test files were loading
 * them (a CLI that read a half-written module crashed), and cost about 8 s of CPU each time.
 */
export async function buildIfStale(): Promise<void> {
  if (isBuiltFresh()) return;
  await promisify(execFile)('npm', ['run', 'build'], { cwd: root, timeout: 180_000 });
  builtIsFresh = true;
}

/**
 * How a child process loads payhooks' library (`createPayhooks`, …) the way {@link cliNodeArgs} starts the CLI: from
 * the fresh build without a loader, else the sources through tsx. `entry` is a file URL to import; `execArgv` goes
 * to `fork`/`spawn` before the script.
 *
 * @example
 * const { execArgv, entry } = libraryEntry();
 * fork(fixture, [], { execArgv, env: { ...process.env, PAYHOOKS_TEST_ENTRY: entry } });
 */
export function libraryEntry(): { execArgv: string[]; entry: string } {
  return builtIsFresh
    ? { execArgv: [...V8_FLAGS], entry: new URL('../../dist/index.js', import.meta.url).href }
    : { execArgv: [...V8_FLAGS, '--import', tsx], entry: new URL('../../src/index.ts', import.meta.url).href };
}

/**
 * The node arguments that start `payhooks`: the built CLI when it is fresh and nothing asks for TypeScript (a `.ts`
 * handlers file or configuration in the arguments or the environment needs tsx's loader), else the sources through tsx.
 *
 * @example
 * spawn(process.execPath, [...cliNodeArgs(['events', 'list']), 'events', 'list'])
 */
export function cliNodeArgs(args: readonly string[] = [], env: Record<string, string | undefined> = {}): string[] {
  const typescript = [...args, ...Object.values(env)].some((value) => value !== undefined && /\.[cm]?ts$/.test(value));
  return builtIsFresh && !typescript ? [...V8_FLAGS, built] : [...V8_FLAGS, '--import', tsx, entry];
}

/** The result of one CLI run. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts `payhooks <args>` as a real process (the fresh build, or the sources through tsx: see {@link cliNodeArgs}). */
export function spawnCli(args: string[], env: Record<string, string | undefined> = {}, cwd?: string): ChildProcess {
  return spawn(process.execPath, [...cliNodeArgs(args, env), ...args], {
    cwd,
    env: { ...process.env, PAYHOOKS_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs `payhooks <args>` to the end, with a time limit. */
export function runCli(args: string[], env: Record<string, string | undefined> = {}, cwd?: string, timeoutMs = 60_000): Promise<CliResult> {
  const child = spawnCli(args, env, cwd);
  return collect(child, timeoutMs);
}

/** Collects a child's output until it exits (killed after `timeoutMs`); a child that could not start resolves with code null. */
export function collect(child: ChildProcess, timeoutMs = 60_000): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    const done = (code: number | null) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    };
    // Without a listener, a spawn that fails on a loaded machine (EAGAIN) would be an uncaught error of the test file.
    child.on('error', (error) => {
      stderr += `\n[collect] ${error.message}`;
      done(null);
    });
    child.on('close', done);
  });
}

/** Every JSON log line a process (and the children sharing its stdout) has written so far, kept up to date as it writes. */
export function logLines(child: ChildProcess): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const text = partial + chunk.toString();
    const complete = text.split('\n');
    partial = complete.pop() ?? '';
    for (const line of complete) {
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    }
  });
  return lines;
}

/**
 * Resolves with the first stdout line (pino JSON) whose msg matches, e.g. the service's URL; rejects when the child
 * exits first or after `timeoutMs`. Tests start several at once, before the lines are printed: when one fails and the
 * test ends, the others are never awaited, so their rejection is marked handled here (an awaiting caller still gets
 * it) instead of surfacing as an unhandled error of the file that hides the failure that caused it.
 */
export function waitForLog(child: ChildProcess, msg: RegExp, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  const found = new Promise<Record<string, unknown>>((resolve, reject) => {
    let output = '';
    let partial = '';
    const settle = (finish: () => void) => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      finish();
    };
    const timer = setTimeout(
      () => settle(() => reject(new Error(`no log line matching ${msg} within ${timeoutMs} ms; got:\n${output}`))),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const lines = (partial + chunk.toString()).split('\n');
      // Only whole lines are parsed, each once: the last piece waits for the rest of its line.
      partial = lines.pop()!;
      for (const line of lines) {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (typeof entry.msg === 'string' && msg.test(entry.msg)) return settle(() => resolve(entry));
        } catch {
          // not a JSON line
        }
      }
    };
    const onExit = (code: number | null) =>
      settle(() => reject(new Error(`exited with ${code} before logging ${msg}; output:\n${output}`)));
    child.stdout?.on('data', onData);
    child.on('exit', onExit);
  });
  found.catch(() => undefined);
  return found;
}

/**
 * Runs `payhooks <args>` inside this process, through the CLI's `run()`, for cases that only parse and print (help,
 * version, argument and configuration errors): what a spawned process would print, without starting one. `env` is
 * set for the run (undefined: unset) and put back after, and so is the working directory `cwd`; stdout is what `run` prints, stderr what it writes to
 * process.stderr meanwhile. `code` is the exit code `runAndExit` would exit with. Keep a spawned test
 * ({@link runCli}) for what needs a real process: the exit itself, piped output, signals.
 *
 * @example
 * const { code, stderr } = await runInProcess(['events', 'list', '--status', 'lost']);
 */
export async function runInProcess(args: string[], env: Record<string, string | undefined> = {}, cwd?: string): Promise<CliResult> {
  const { run } = await import('../../src/cli/main.js');
  const saved = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  const setEnv = (values: Record<string, string | undefined>) => {
    for (const [key, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
  let stdout = '';
  let stderr = '';
  // The CLI writes its errors through stdio(), which writes to process.stderr: taken here for the run, with each
  // write's callback called as the stream would (Output.flushed waits on one).
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown, ...rest: unknown[]) => {
    stderr += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString();
    const callback = rest.find((arg): arg is () => void => typeof arg === 'function');
    if (callback) process.nextTick(callback);
    return true;
  });
  setEnv(env);
  const home = process.cwd();
  if (cwd) process.chdir(cwd);
  try {
    const code = await run(args, (text) => {
      stdout += `${text}\n`;
    });
    return { code, stdout, stderr };
  } finally {
    write.mockRestore();
    process.chdir(home);
    setEnv(saved);
  }
}
