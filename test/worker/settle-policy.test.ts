// The settle policy decides, without I/O, how an attempt of an event ends from what its handlers did: each outcome
// the worker can record, case by case.
import { describe, expect, it } from 'vitest';
import { DeadLetterError, RetryLaterError } from '../../src/worker/handler-errors.js';
import { type AttemptResult, settleAttempt, settleFailureOutsideHandlers } from '../../src/worker/settle-policy.js';

// The lowest jitter: each delay is half the backoff's value, so the tests can name it.
const rules = { maxAttempts: 5, backoff: { baseMs: 1000, maxMs: 60_000 }, random: () => 0 };
const attempt = (result: Partial<AttemptResult>): AttemptResult => ({
  account: 'default',
  eventId: 'evt_1',
  attempt: 1,
  resourceKey: 'invoice:inv_1',
  failures: [],
  skipped: [],
  reviews: [],
  givenUpBefore: [],
  ...result,
});
const boom = new Error('the CRM answered 500');

describe('settleAttempt', () => {
  it('done: every handler ran and none failed', () => {
    expect(settleAttempt(attempt({}), rules)).toEqual({
      kind: 'done',
      gaveUp: [],
      outcome: { kind: 'finished', account: 'default', eventId: 'evt_1', status: 'done', lastError: null },
    });
  });

  it('retry, after the backoff of this attempt: the failed handlers are owed, with the skipped and held ones', () => {
    const settlement = settleAttempt(
      attempt({
        attempt: 3,
        failures: [{ handler: 'crm', error: boom }],
        skipped: ['mirror'],
        reviews: [{ handler: 'charge', error: new Error('unknown outcome') }],
      }),
      rules,
    );
    expect(settlement).toMatchObject({ kind: 'retry', retried: ['crm'], gaveUp: [] });
    // 1000 · 2^(3−1) at the lowest jitter.
    expect(settlement.outcome).toEqual({
      kind: 'retry',
      account: 'default',
      eventId: 'evt_1',
      delayMs: 2000,
      owed: ['crm', 'mirror', 'charge'],
      lastError: 'charge: Error: unknown outcome; crm: Error: the CRM answered 500',
    });
  });

  it('retry waits as long as a handler asked (RetryLaterError), within the cap', () => {
    const asked = settleAttempt(attempt({ failures: [{ handler: 'crm', error: new RetryLaterError('429', { afterMs: 30_000 }) }] }), rules);
    expect(asked.outcome).toMatchObject({ kind: 'retry', delayMs: 30_000 });
    const tooLong = settleAttempt(
      attempt({ failures: [{ handler: 'crm', error: new RetryLaterError('429', { afterMs: 600_000 }) }] }),
      rules,
    );
    expect(tooLong.outcome).toMatchObject({ kind: 'retry', delayMs: rules.backoff.maxMs });
  });

  it('park behind an earlier event of the resource: nothing failed, but a handler is owed by the earlier event', () => {
    expect(settleAttempt(attempt({ skipped: ['mirror', 'crm'] }), rules)).toEqual({
      kind: 'park',
      gaveUp: [],
      waitingFor: 'an earlier event of invoice:inv_1 at mirror, crm',
      outcome: {
        kind: 'park',
        account: 'default',
        eventId: 'evt_1',
        owed: ['mirror', 'crm'],
        lastError: 'Waiting for an earlier event of invoice:inv_1 at mirror, crm.',
      },
    });
  });

  it('needs-review: a handler is held at an effect step of unknown outcome, and nothing else is left to retry', () => {
    const settlement = settleAttempt(attempt({ reviews: [{ handler: 'charge', error: new Error('unknown outcome') }] }), rules);
    expect(settlement).toMatchObject({ kind: 'needs-review', held: ['charge'] });
    expect(settlement.outcome).toEqual({
      kind: 'finished',
      account: 'default',
      eventId: 'evt_1',
      status: 'needs-review',
      lastError: 'Error: unknown outcome',
    });
  });

  it('dead after the last attempt: the failed handler gives up, and the event ends dead', () => {
    const settlement = settleAttempt(attempt({ attempt: 5, failures: [{ handler: 'crm', error: boom }] }), rules);
    expect(settlement).toMatchObject({ kind: 'dead', deadHandlers: ['crm'] });
    expect(settlement.gaveUp.map((f) => f.handler)).toEqual(['crm']);
    expect(settlement.outcome).toEqual({
      kind: 'finished',
      account: 'default',
      eventId: 'evt_1',
      status: 'dead',
      lastError: 'Error: the CRM answered 500',
    });
  });

  it('a handler that gave up (DeadLetterError) beside completed ones: the event ends dead, on its first attempt', () => {
    const settlement = settleAttempt(attempt({ failures: [{ handler: 'erp', error: new DeadLetterError('400: bad address') }] }), rules);
    expect(settlement.kind).toBe('dead');
    expect(settlement.outcome).toMatchObject({ status: 'dead', lastError: 'DeadLetterError: 400: bad address' });
  });

  it('a handler that gave up on an earlier attempt keeps the event dead once the others are through, naming both', () => {
    const settlement = settleAttempt(
      attempt({ attempt: 2, givenUpBefore: [{ handler: 'erp', error: 'DeadLetterError: 400' }], failures: [] }),
      rules,
    );
    expect(settlement).toMatchObject({ kind: 'dead', gaveUp: [], deadHandlers: ['erp'] });
    expect(settlement.outcome).toMatchObject({ status: 'dead', lastError: 'erp: DeadLetterError: 400' });
  });

  it('a retry wins over a give-up in the same attempt: the given-up handler is marked, the event is retried for the rest', () => {
    const settlement = settleAttempt(
      attempt({
        failures: [
          { handler: 'erp', error: new DeadLetterError('400') },
          { handler: 'crm', error: boom },
        ],
      }),
      rules,
    );
    expect(settlement).toMatchObject({ kind: 'retry', retried: ['crm'] });
    expect(settlement.gaveUp.map((f) => f.handler)).toEqual(['erp']);
  });
});

describe('settleFailureOutsideHandlers', () => {
  it('retries the whole event (every handler owed) before the last attempt, and ends it dead on the last', () => {
    expect(settleFailureOutsideHandlers({ account: 'default', eventId: 'evt_1' }, 2, boom, rules).outcome).toEqual({
      kind: 'retry',
      account: 'default',
      eventId: 'evt_1',
      delayMs: 1000,
      lastError: 'Error: the CRM answered 500',
      owed: null,
    });
    expect(settleFailureOutsideHandlers({ account: 'default', eventId: 'evt_1' }, 5, boom, rules).outcome).toEqual({
      kind: 'finished',
      account: 'default',
      eventId: 'evt_1',
      status: 'dead',
      lastError: 'Error: the CRM answered 500',
    });
  });
});
