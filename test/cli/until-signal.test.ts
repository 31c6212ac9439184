import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { untilSignal } from '../../src/cli/until-signal.js';

afterEach(() => {
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
});

function capture(): { logger: pino.Logger; messages: string[] } {
  const messages: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      messages.push(JSON.parse(String(chunk)).msg);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), messages };
}

it('a second signal during a slow close is noted, and close runs once', async () => {
  // The test worker has no signal listeners of its own (checked here), so emitting reaches only untilSignal's.
  expect(process.listenerCount('SIGINT') + process.listenerCount('SIGTERM')).toBe(0);
  const { logger, messages } = capture();
  let closes = 0;
  let finish!: () => void;
  const stopped = untilSignal(logger, () => {
    closes += 1;
    return new Promise<void>((resolve) => {
      finish = resolve;
    });
  });
  process.emit('SIGTERM');
  process.emit('SIGINT');
  finish();
  expect(await stopped).toBe(true);
  expect(closes).toBe(1);
  expect(messages).toEqual(['shutting down', 'already shutting down']);
});

it('stops when `until` resolves, as on a signal: close runs once, and a later signal is only noted', async () => {
  const { logger, messages } = capture();
  let closes = 0;
  let parentGone!: (reason: string) => void;
  const stopped = untilSignal(
    logger,
    async () => {
      closes += 1;
    },
    { until: new Promise<string>((resolve) => (parentGone = resolve)) },
  );
  parentGone('the serve process that started this worker is gone');
  expect(await stopped).toBe(true);
  process.emit('SIGTERM');
  expect(closes).toBe(1);
  expect(messages).toEqual(['shutting down', 'already shutting down']);
});
