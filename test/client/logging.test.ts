import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { API_KEY, customer, useApiServer } from './support.js';

const { server, client } = useApiServer();

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: pino({ level: 'debug' }, stream) };
}

describe('logging', () => {
  it('logs each attempt at debug and each retry at warn, never the key, the header or bodies', async () => {
    const { lines, logger } = capture();
    server().queue({ status: 503, json: { error: { message: 'busy' } } }, { json: customer });
    await client({ logger }).customers.create({ username: 'ada', email: 'ada@example.com' });
    await new Promise((resolve) => setImmediate(resolve));

    const debug = lines.filter((line) => line.level === 20);
    const warn = lines.filter((line) => line.level === 40);
    expect(debug.map((line) => [line.method, line.path, line.status, line.attempt])).toEqual([
      ['POST', '/v1/customers', 503, 1],
      ['POST', '/v1/customers', 200, 2],
    ]);
    expect(debug.every((line) => typeof line.durationMs === 'number')).toBe(true);
    expect(warn).toHaveLength(1);
    expect(warn[0]).toMatchObject({ method: 'POST', path: '/v1/customers', status: 503, attempt: 1, error: 'ServerError' });

    const text = JSON.stringify(lines);
    for (const secret of [API_KEY, 'Bearer', 'ada@example.com', 'busy', customer.id]) expect(text).not.toContain(secret);
  });
});
