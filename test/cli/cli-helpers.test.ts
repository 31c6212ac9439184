import { spawn } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collect, waitForLog } from '../helpers/cli.js';

// The helpers the CLI's process tests lean on: a test that fails must fail by its own assertion, not leave behind
// errors of promises and children nobody listens to any more ("2 unhandled errors in cli.test.ts" on a loaded machine).
describe('test/helpers/cli.ts', () => {
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => void unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', record);
  });
  afterEach(() => {
    process.off('unhandledRejection', record);
  });

  it('a waitForLog nobody awaits any more rejects without an unhandled rejection when the child exits', async () => {
    const child = spawn(process.execPath, ['-e', 'console.log(JSON.stringify({ msg: "started" }))'], { stdio: ['ignore', 'pipe', 'pipe'] });
    // As cli.test.ts does: several lines listened for at once; the test stops at the first (here it succeeds).
    const [started, never] = [waitForLog(child, /^started$/), waitForLog(child, /^never printed$/)];
    const done = collect(child);
    expect((await started).msg).toBe('started');
    expect((await done).code).toBe(0);
    // The second rejected on the exit; a few turns of the loop for the process to notice that nobody handled it.
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(unhandled).toEqual([]);
    await expect(never).rejects.toThrow(/exited with 0 before logging/);
  });

  it('collect resolves with code null and says why when the child cannot start', async () => {
    const child = spawn('/nonexistent/payhooks-no-such-program', [], { stdio: ['ignore', 'pipe', 'pipe'] });
    const result = await collect(child);
    expect(result.code).toBeNull();
    expect(result.stderr).toMatch(/ENOENT/);
  });
});
