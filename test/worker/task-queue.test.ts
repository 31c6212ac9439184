import { describe, expect, it } from 'vitest';
import { TaskQueue } from '../../src/internal/task-queue.js';

/** A task that runs until `release` is called, recording its start and end in `log`. */
function gated(log: string[], name: string) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return {
    task: async () => {
      log.push(`start ${name}`);
      await gate;
      log.push(`end ${name}`);
    },
    release: () => release(),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('TaskQueue', () => {
  it('runs at most `concurrency` tasks at once, in the order added', async () => {
    const log: string[] = [];
    const queue = new TaskQueue(2);
    const tasks = ['a', 'b', 'c', 'd'].map((name) => gated(log, name));
    for (const t of tasks) queue.add(t.task);
    await tick();
    expect(log).toEqual(['start a', 'start b']);
    expect(queue.pending).toBe(2);
    tasks[1]!.release();
    await tick();
    expect(log).toEqual(['start a', 'start b', 'end b', 'start c']);
    tasks[0]!.release();
    tasks[2]!.release();
    tasks[3]!.release();
    await queue.onIdle();
    expect(log.filter((l) => l.startsWith('start'))).toEqual(['start a', 'start b', 'start c', 'start d']);
    expect(queue.pending).toBe(0);
  });

  it('goes on after a task that rejects or throws', async () => {
    const queue = new TaskQueue(1);
    const ran: number[] = [];
    queue.add(() => Promise.reject(new Error('no')));
    queue.add(() => {
      throw new Error('sync');
    });
    queue.add(async () => void ran.push(3));
    await queue.onIdle();
    expect(ran).toEqual([3]);
  });

  it('clear drops what has not started; onIdle waits for what runs', async () => {
    const log: string[] = [];
    const queue = new TaskQueue(1);
    const first = gated(log, 'a');
    queue.add(first.task);
    queue.add(gated(log, 'b').task);
    await tick();
    queue.clear();
    let idle = false;
    const waiting = queue.onIdle().then(() => (idle = true));
    await tick();
    expect(idle).toBe(false);
    first.release();
    await waiting;
    expect(log).toEqual(['start a', 'end a']);
    await expect(new TaskQueue(1).onIdle()).resolves.toBeUndefined();
  });

  it('keeps its order across many tasks (the array is compacted as it goes)', async () => {
    const queue = new TaskQueue(3);
    const started: number[] = [];
    for (let i = 0; i < 5000; i++) queue.add(async () => void started.push(i));
    await queue.onIdle();
    expect(started).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  });
});
