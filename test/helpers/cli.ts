import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

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
