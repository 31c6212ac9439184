import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';

/**
 * Whether process `pid` still runs: it exists and is not a zombie (an orphan's exit is reaped by whoever adopted it,
 * which may be late or never; a zombie runs nothing, holds no connection and writes no file).
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists, under another user (a postmaster started as postgres).
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return true;
  // The state follows the command's name, which is in parentheses and may itself hold some.
  const state = readFileSync(stat, 'utf8').replace(/^.*\) /s, '')[0];
  return state !== 'Z' && state !== 'X';
}

/**
 * The running processes whose working directory is `dir` or below it: PostgreSQL's postmaster and every backend and
 * background process of it work in their data directory. Read from /proc (Linux), and only the processes this one may
 * inspect (all of them as root, as CI runs); elsewhere, none.
 */
export function processesWorkingIn(dir: string): number[] {
  let root: string;
  let names: string[];
  try {
    root = realpathSync(dir);
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cwd = readlinkSync(`/proc/${name}/cwd`);
      if (cwd === root || cwd.startsWith(`${root}/`)) pids.push(Number(name));
    } catch {
      // Gone meanwhile, or not this process's to inspect.
    }
  }
  return pids.filter(isRunning);
}
