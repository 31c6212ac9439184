import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { addressKey, FAILURE_THROTTLE_DEFAULTS, FailureThrottle } from '../../src/console/failure-throttle.js';

function capturing() {
  const lines: { level: number; msg: string; address: string; failures: number }[] = [];
  return { lines, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}

describe('FailureThrottle', () => {
  it('answers the first failures at once, then doubles the wait per failure up to the cap, per address', () => {
    const throttle = new FailureThrottle();
    const delays = Array.from({ length: 12 }, () => throttle.failed('203.0.113.1', 1000));
    expect(delays).toEqual([0, 0, 0, 250, 500, 1000, 2000, 4000, 8000, 8000, 8000, 8000]);
    expect(throttle.failed('203.0.113.2', 1000)).toBe(0);
  });

  it('logs the first slowed failure and then each doubling, at warn, with the address and no token', () => {
    const { lines, logger } = capturing();
    const throttle = new FailureThrottle(logger);
    for (let i = 0; i < 40; i += 1) throttle.failed('::ffff:203.0.113.9', 1000);
    expect(lines.map((line) => [line.level, line.failures])).toEqual([
      [40, 4],
      [40, 8],
      [40, 16],
      [40, 32],
    ]);
    expect(lines[0]).toMatchObject({ address: '203.0.113.9' });
    expect(lines[0]!.msg).toBe(
      'console: 4 failed authentications from 203.0.113.9 in the last 15 minutes; each further one is answered after a delay',
    );
  });

  it('forgets an address after a quiet while, and never holds more than maxAddresses', () => {
    const limits = { ...FAILURE_THROTTLE_DEFAULTS, maxAddresses: 100 };
    const throttle = new FailureThrottle(undefined, limits);
    for (let i = 0; i < 5; i += 1) throttle.failed('203.0.113.1', 0);
    expect(throttle.failed('203.0.113.1', limits.forgetAfterMs + 1)).toBe(0);
    for (let i = 0; i < 10_000; i += 1) throttle.failed(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, 2 * limits.forgetAfterMs);
    expect(throttle.size).toBe(100);
  });

  it('counts IPv6 per /64 and IPv4-mapped addresses as IPv4', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(addressKey(undefined)).toBe('unknown');
    const throttle = new FailureThrottle();
    for (let i = 1; i <= 4; i += 1) throttle.failed(`2001:db8:1:2::${i}`, 0);
    expect(throttle.failed('2001:db8:1:2:ffff::9', 0)).toBe(500);
  });
});
