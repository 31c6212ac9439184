import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));

/** A loopback port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface Server {
  child: ChildProcess;
  url: string;
  /** The process's peak resident set so far, in MB (VmHWM). */
  peakRssMb(): number;
  stop(): Promise<void>;
}

/** Polls `url` until it answers 200, or fails after `timeoutMs` (with what the process printed). */
async function waitUntilUp(url: string, child: ChildProcess, output: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: the server exited with ${child.exitCode}:\n${output()}`);
    const ok = await fetch(url)
      .then((res) => res.status === 200)
      .catch(() => false);
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms:\n${output()}`);
}

/**
 * Starts a server process (`node …args`) on `port` and waits until `healthPath` answers 200. Its output is kept
 * (the last 20 KB) for the error when it fails. An env value of undefined removes that variable.
 */
export async function startServer(
  args: string[],
  env: Record<string, string | undefined>,
  port: number,
  healthPath = '/healthz',
): Promise<Server> {
  const merged: Record<string, string | undefined> = {
    ...process.env,
    PAYHOOKS_LOG_LEVEL: 'warn',
    ...env,
    PORT: String(port),
    HOST: '127.0.0.1',
  };
  // An env value of undefined removes the variable (PGlite runs: no DATABASE_URL).
  for (const [key, value] of Object.entries(merged)) if (value === undefined) delete merged[key];
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: merged,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitUntilUp(base + healthPath, child, () => output);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    child,
    url: base,
    peakRssMb() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
      return kb / 1024;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** `node bin/payhooks.js …` (the compiled CLI, as users run it). */
export function payhooksArgs(...args: string[]): string[] {
  return ['bin/payhooks.js', ...args];
}

/** `node --import tsx <script>` for the bench's own servers. */
export function tsxArgs(script: string): string[] {
  return ['--import', 'tsx', script];
}
