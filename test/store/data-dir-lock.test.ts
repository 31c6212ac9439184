import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirInUseError, type LockStrategy, lockDataDir } from '../../src/store/data-dir-lock.js';
import { realDataDir } from '../../src/store/real-data-dir.js';

const racerEntry = fileURLToPath(new URL('../fixtures/lock-racer.ts', import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const dir = mkdtempSync(join(tmpdir(), 'payhooks-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A lock-racer child process: send it a command, read its one-line answer. */
interface Racer {
  child: ChildProcessWithoutNullStreams;
  ask(command: string): Promise<string>;
}

async function startRacer(): Promise<Racer> {
  const child = spawn(process.execPath, ['--import', tsx, racerEntry], { stdio: ['pipe', 'pipe', 'pipe'] });
  const answers: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const next = waiting.shift();
    if (next) next(line);
    else answers.push(line);
  });
  const read = () => new Promise<string>((resolve) => (answers.length ? resolve(answers.shift()!) : waiting.push(resolve)));
  expect(await read()).toBe('ready');
  return {
    child,
    ask(command) {
      child.stdin.write(`${command}\n`);
      return read();
    },
  };
}

const strategies: LockStrategy[] = process.platform === 'linux' ? ['socket', 'file'] : ['file'];

describe.each(strategies)('the embedded-database lock (%s)', (strategy) => {
  it('two processes racing for one folder: exactly one owner in each of 200 trials', { timeout: 120_000 }, async () => {
    const racers = await Promise.all([startRacer(), startRacer()]);
    const dataDir = join(dir, `race-${strategy}`);
    try {
      for (let trial = 0; trial < 200; trial++) {
        const answers = await Promise.all(racers.map((racer) => racer.ask(`lock ${strategy} ${dataDir}`)));
        const winners = answers.filter((answer) => answer === 'got');
        expect(winners, `trial ${trial}: ${answers.join(' / ')}`).toHaveLength(1);
        const loser = answers.find((answer) => answer !== 'got')!;
        expect(loser).toMatch(/^busy \d+$/);
        const winner = racers[answers.indexOf('got')]!;
        expect(await winner.ask('release')).toBe('released');
      }
    } finally {
      for (const racer of racers) racer.child.kill('SIGKILL');
    }
  });

  it('a lock whose owner was killed is taken over; a live owner is named in the refusal', { timeout: 30_000 }, async () => {
    const dataDir = join(dir, `killed-${strategy}`);
    const owner = await startRacer();
    expect(await owner.ask(`lock ${strategy} ${dataDir}`)).toBe('got');
    const refusal = await lockDataDir(dataDir, { strategy }).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(DataDirInUseError);
    expect((refusal as DataDirInUseError).holderPid).toBe(owner.child.pid);
    expect((refusal as Error).message).toMatch(new RegExp(`in use by process ${owner.child.pid}`));

    const exited = new Promise((resolve) => owner.child.once('exit', resolve));
    owner.child.kill('SIGKILL');
    await exited;
    const release = await lockDataDir(dataDir, { strategy });
    expect(Number.parseInt(readFileSync(`${dataDir}.lock`, 'utf8'), 10)).toBe(process.pid);
    await release();
    await release(); // twice is harmless
    const again = await lockDataDir(dataDir, { strategy });
    await again();
  });

  it('one folder by two names (a symbolic link, `..`) is one lock, across processes, named by its real path', {
    timeout: 30_000,
  }, async () => {
    const base = join(dir, `names-${strategy}`);
    mkdirSync(join(base, 'real', 'inner'), { recursive: true });
    symlinkSync('real', join(base, 'link'));
    symlinkSync(join('real', 'inner'), join(base, 'deep'));
    const real = join(realDataDir(base), 'real', 'pgdata');
    const throughParentOfLink = `${base}/deep/../pgdata`; // not path.join, which would drop `deep/..` from the text
    const owner = await startRacer();
    try {
      expect(await owner.ask(`lock ${strategy} ${join(base, 'link', 'pgdata')}`)).toBe('got');
      for (const name of [real, join(base, 'link', 'pgdata'), throughParentOfLink]) {
        const refusal = await lockDataDir(name, { strategy }).catch((err: unknown) => err);
        expect(refusal, name).toBeInstanceOf(DataDirInUseError);
        expect((refusal as DataDirInUseError).dataDir).toBe(real);
        expect((refusal as DataDirInUseError).holderPid).toBe(owner.child.pid);
      }
      expect(Number.parseInt(readFileSync(`${real}.lock`, 'utf8'), 10)).toBe(owner.child.pid);
      expect(await owner.ask('release')).toBe('released');
      const release = await lockDataDir(throughParentOfLink, { strategy });
      expect(await owner.ask(`lock ${strategy} ${real}`)).toBe(`busy ${process.pid}`);
      await release();
    } finally {
      owner.child.kill('SIGKILL');
    }
  });
});

describe('the file lock', () => {
  it('takes over a lock file left by a process that no longer exists', async () => {
    const dataDir = join(dir, 'stale-file');
    // A pid far above any pid_max, so no live process holds it.
    writeFileSync(`${dataDir}.lock`, '2147483646\nleft-behind\n');
    const release = await lockDataDir(dataDir, { strategy: 'file' });
    expect(readFileSync(`${dataDir}.lock`, 'utf8')).toMatch(new RegExp(`^${process.pid}\\n`));
    await release();
    expect(() => readFileSync(`${dataDir}.lock`)).toThrow();
  });
});
