import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { vi } from 'vitest';

const entry = fileURLToPath(new URL('../fixtures/cli.ts', import.meta.url));
// By URL, so that the child finds tsx whatever its working directory.
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** The result of one CLI run. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts `payhooks <args>` as a real process (from source, through tsx). */
export function spawnCli(args: string[], env: Record<string, string | undefined> = {}, cwd?: string): ChildProcess {
  return spawn(process.execPath, ['--import', tsx, entry, ...args], {
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

/** Collects a child's output until it exits (killed after `timeoutMs`). */
export function collect(child: ChildProcess, timeoutMs = 60_000): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Resolves with the first stdout line (pino JSON) whose msg matches, e.g. the service's URL. */
export function waitForLog(child: ChildProcess, msg: RegExp, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`no log line matching ${msg} within ${timeoutMs} ms; got:\n${buffered}`)), timeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      for (const line of buffered.split('\n')) {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (typeof entry.msg === 'string' && msg.test(entry.msg)) {
            clearTimeout(timer);
            resolve(entry);
          }
        } catch {
          // a partial line
        }
      }
    });
    child.on('exit', (code) => reject(new Error(`exited with ${code} before logging ${msg}; output:\n${buffered}`)));
  });
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
