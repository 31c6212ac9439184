// The alarms as a pure function: the same inputs give the same statuses; each check fires on its condition only,
// and says unknown (never ok) when its input is missing.
import { describe, expect, it } from 'vitest';
import { type AlarmInputs, type AlarmName, evaluateAlarms } from '../../src/alarms/alarm-checks.js';
import { DeliveryWatch } from '../../src/alarms/delivery-watch.js';
import { ALARM_DEFAULTS } from '../../src/service/service-defaults.js';

const now = new Date('2025-06-01T12:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const MIN = 60_000;

const calm: AlarmInputs = {
  now,
  watchingSince: ago(60 * MIN),
  receiving: true,
  lastAuthenticAt: ago(MIN),
  signatureFailuresInARow: 0,
  lastSignatureFailureAt: null,
  newestReceivedAt: ago(MIN),
  oldestPendingAgeMs: 0,
  recentlyDead: 0,
  quarantined: 0,
  openIssues: { count: 0, newest: null },
  activity: { readAt: now, from: ago(MIN), to: now, changes: 0, examples: [] },
  sender: { readAt: now, endpointState: null, endpointDisabled: false, failedDeliveries: 0, failedExamples: [] },
  sweep: { finishedAt: ago(10 * MIN), outcome: 'clean', unrepairedDrift: 0, unrecoveredEvents: 0, error: null },
};

const statusOf = (inputs: AlarmInputs, name: AlarmName) => evaluateAlarms(inputs, ALARM_DEFAULTS).checks.find((c) => c.name === name)!;

describe('evaluateAlarms', () => {
  it('says ok for every check when all is calm', () => {
    const report = evaluateAlarms(calm, ALARM_DEFAULTS);
    expect(report.status).toBe('ok');
    expect(report.checks.map((c) => [c.name, c.status])).toEqual([
      ['sender_silence', 'ok'],
      ['signature_failures', 'ok'],
      ['sender_failures', 'ok'],
      ['backlog_age', 'ok'],
      ['dead_events', 'ok'],
      ['quarantined_deliveries', 'ok'],
      ['mirror_drift', 'ok'],
      ['open_issues', 'ok'],
    ]);
  });

  it('open issues fire while one is open, and are unknown without the database', () => {
    const open = { ...calm, openIssues: { count: 2, newest: 'ledger: RangeError on INVOICE_PAID, 500 event(s)' } };
    expect(statusOf(open, 'open_issues')).toMatchObject({ status: 'firing', value: 2 });
    expect(statusOf(open, 'open_issues').message).toContain('ledger: RangeError on INVOICE_PAID, 500 event(s)');
    expect(statusOf({ ...calm, openIssues: undefined }, 'open_issues').status).toBe('unknown');
  });

  it('silence fires only with activity at the service, and is unknown without the API', () => {
    const quiet = { ...calm, lastAuthenticAt: ago(20 * MIN), newestReceivedAt: ago(20 * MIN) };
    expect(statusOf(quiet, 'sender_silence').status).toBe('ok');
    const busy = { ...quiet, activity: { ...calm.activity!, changes: 2, examples: ['invoice inv_1 created at …'] } };
    expect(statusOf(busy, 'sender_silence')).toMatchObject({ status: 'firing', value: 1200 });
    expect(statusOf({ ...quiet, activity: undefined }, 'sender_silence').status).toBe('unknown');
    // Another receiver on the database stored an event a minute ago: not silent.
    expect(statusOf({ ...busy, newestReceivedAt: ago(MIN) }, 'sender_silence').status).toBe('ok');
  });

  it('signature failures fire after minFailures refusals in a row, and clear with an authentic delivery or the window', () => {
    const watch = new DeliveryWatch();
    const inputsOf = (at: Date) => ({
      ...calm,
      now: at,
      lastAuthenticAt: watch.lastAuthenticAt,
      signatureFailuresInARow: watch.signatureFailuresInARow,
      lastSignatureFailureAt: watch.lastSignatureFailureAt,
    });
    for (let i = 0; i < 3; i++) watch.delivery({ outcome: 'rejected' }, ago(MIN));
    watch.delivery({ outcome: 'refused' }, ago(MIN));
    expect(statusOf(inputsOf(now), 'signature_failures')).toMatchObject({ status: 'firing', value: 3 });
    expect(statusOf(inputsOf(new Date(now.getTime() + 10 * MIN)), 'signature_failures').status).toBe('ok');
    watch.delivery({ outcome: 'stored' }, now);
    expect(statusOf(inputsOf(now), 'signature_failures')).toMatchObject({ status: 'ok', value: 0 });
    expect(statusOf({ ...calm, receiving: false }, 'signature_failures').status).toBe('unknown');
  });

  it("the sender's view, the backlog, dead events, the quarantine and the sweeper's drift each fire on their own", () => {
    const sender = {
      ...calm.sender!,
      failedDeliveries: 3,
      failedExamples: [{ eventId: 'evt_1', eventType: 'INVOICE_PAID', status: 401, at: 't' }],
    };
    expect(statusOf({ ...calm, sender }, 'sender_failures').status).toBe('firing');
    expect(
      statusOf({ ...calm, sender: { ...calm.sender!, endpointState: 'disabled', endpointDisabled: true } }, 'sender_failures').status,
    ).toBe('firing');
    expect(statusOf({ ...calm, oldestPendingAgeMs: 6 * MIN }, 'backlog_age').status).toBe('firing');
    // A backlog held by one resource says which: its events run one at a time, whatever the worker's concurrency.
    const busy = statusOf(
      { ...calm, oldestPendingAgeMs: 6 * MIN, oldestPendingResource: { key: 'invoice:inv_1', queued: 1950 } },
      'backlog_age',
    );
    expect(busy.message).toContain('It is one of 1950 queued events of invoice:inv_1, which run one at a time and in order');
    const alone = statusOf(
      { ...calm, oldestPendingAgeMs: 6 * MIN, oldestPendingResource: { key: 'invoice:inv_1', queued: 1 } },
      'backlog_age',
    );
    expect(alone.message).not.toContain('queued events of');
    expect(statusOf({ ...calm, recentlyDead: 1 }, 'dead_events').status).toBe('firing');
    expect(statusOf({ ...calm, quarantined: 2 }, 'quarantined_deliveries').status).toBe('firing');
    expect(statusOf({ ...calm, sweep: { ...calm.sweep!, outcome: 'found', unrepairedDrift: 1 } }, 'mirror_drift').status).toBe('firing');
    expect(statusOf({ ...calm, sweep: null }, 'mirror_drift').status).toBe('unknown');
    expect(evaluateAlarms({ ...calm, oldestPendingAgeMs: undefined }, ALARM_DEFAULTS).status).toBe('unknown');
    expect(evaluateAlarms({ ...calm, quarantined: 1, oldestPendingAgeMs: undefined }, ALARM_DEFAULTS).status).toBe('firing');
  });
});
