// The wait of a start for a server that answers but has no room (issue 49): which answers are waited on, and that a
// wait tries again, says why each time, and gives up at once on anything else.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { busyServerReason, untilAdmitted } from '../../src/store/until-admitted.js';

const serverError = (code: string, message: string) => Object.assign(new Error(message), { code });

/** A logger that keeps its JSON lines. */
function capturing() {
  const lines: { level: number; msg: string; tries?: number; reason?: string }[] = [];
  return { lines, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}

describe('busyServerReason', () => {
  it('names no free slot (53300) and a server starting up (57P03), also when wrapped as a cause', () => {
    expect(busyServerReason(serverError('53300', 'sorry, too many clients already'))).toBe(
      'the server has no free connection slot (SQLSTATE 53300: sorry, too many clients already)',
    );
    expect(busyServerReason(serverError('57P03', 'the database system is starting up'))).toMatch(/^the server is starting up/);
    const wrapped = new Error('could not open the inbox', { cause: serverError('53300', 'sorry, too many clients already') });
    expect(busyServerReason(wrapped)).toMatch(/SQLSTATE 53300/);
  });

  it('is undefined for what is configuration to fix or another failure', () => {
    for (const code of ['ECONNREFUSED', '28P01', '3D000', '42P01', '57P01'])
      expect(busyServerReason(serverError(code, code))).toBeUndefined();
    expect(busyServerReason(new Error('no code'))).toBeUndefined();
    expect(busyServerReason(undefined)).toBeUndefined();
  });
});

describe('untilAdmitted', () => {
  it('tries again while the server has no slot, saying so each time, then says it was admitted', async () => {
    const { lines, logger } = capturing();
    let calls = 0;
    const opened = await untilAdmitted(
      async () => {
        calls += 1;
        if (calls <= 2) throw serverError('53300', 'sorry, too many clients already');
        return 'store';
      },
      { logger, what: 'the worker', backoff: { baseMs: 1, maxMs: 2 } },
    );
    expect(opened).toBe('store');
    expect(calls).toBe(3);
    expect(lines.map((line) => line.msg.replace(/\d+ ms/, 'N ms'))).toEqual([
      'waiting for the database: the server has no free connection slot (SQLSTATE 53300: sorry, too many clients already); trying again in N ms (the worker starts once a session is admitted)',
      'waiting for the database: the server has no free connection slot (SQLSTATE 53300: sorry, too many clients already); trying again in N ms (the worker starts once a session is admitted)',
      'the database admitted the worker; starting',
    ]);
    expect(lines.map((line) => line.level)).toEqual([40, 40, 30]);
    expect(lines[2]?.tries).toBe(3);
  });

  it('throws any other error at once, without waiting or logging', async () => {
    const { lines, logger } = capturing();
    let calls = 0;
    const refused = serverError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1');
    await expect(
      untilAdmitted(
        async () => {
          calls += 1;
          throw refused;
        },
        { logger, what: 'the service' },
      ),
    ).rejects.toBe(refused);
    expect(calls).toBe(1);
    expect(lines).toEqual([]);
  });

  it('stops waiting when its signal aborts', async () => {
    const { logger } = capturing();
    const controller = new AbortController();
    const waiting = untilAdmitted(
      async () => {
        controller.abort(new Error('stopped'));
        throw serverError('53300', 'sorry, too many clients already');
      },
      { logger, what: 'the worker', signal: controller.signal, backoff: { baseMs: 60_000, maxMs: 60_000 } },
    );
    await expect(waiting).rejects.toThrow('stopped');
  });
});
