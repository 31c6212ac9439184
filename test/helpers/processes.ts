import { existsSync, readFileSync } from 'node:fs';

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
