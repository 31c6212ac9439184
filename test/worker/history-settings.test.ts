import { describe, expect, it } from 'vitest';
import { historySettings } from '../../src/worker/history-upkeep.js';

describe('history settings', () => {
  it('default to daily partitions, three ahead, history and ledger kept forever, the upkeep hourly', () => {
    expect(historySettings()).toEqual({ span: 'day', ahead: 3, retentionMs: null, ledgerRetentionMs: null, everyMs: 3_600_000 });
  });

  it('take a week, or a duration, and run the upkeep every quarter of a partition', () => {
    expect(historySettings({ partition: 'week', retention: { history: '90d', ledger: '400d' } })).toMatchObject({
      span: 'week',
      retentionMs: 90 * 86_400_000,
      ledgerRetentionMs: 400 * 86_400_000,
      everyMs: 3_600_000,
    });
    expect(historySettings({ partition: '20s', retention: { history: '140s' } })).toMatchObject({
      span: { ms: 20_000 },
      retentionMs: 140_000,
      everyMs: 5000,
    });
    // History may be kept for less than the sender's retry horizon: deduplication is the ledger's.
    expect(historySettings({ retention: { history: '1h' } }).retentionMs).toBe(3_600_000);
  });

  it.each([
    [{ partition: 'fortnight' }, /^partition must be a duration such as 30d/],
    [{ partition: '500ms' }, /^partition must be a duration such as 30d/],
    [{ partition: '40d' }, /^partition must be day, week or a duration from 1s to 31d/],
    [{ ahead: 0 }, /^ahead must be a whole number of partitions from 1 to 400, not 0/],
    [{ retention: { history: 'a month' } }, /^retention.history must be a duration/],
    [{ retention: { ledger: '2d' } }, /^retention.ledger must be at least the sender's retry horizon \(4d7h\)/],
  ])('refuse %j, naming the option', (options, message) => {
    expect(() => historySettings(options)).toThrow(message);
  });
});
