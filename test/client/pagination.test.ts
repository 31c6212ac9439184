import { describe, expect, it } from 'vitest';
import { ApiResponseValidationError } from '../../src/client/index.js';
import { invoice, useApiServer, webhookEventRecord } from './support.js';

const { server, client } = useApiServer();

function invoices(count: number) {
  return Array.from({ length: count }, (_, n) => ({ ...invoice, id: `inv_${n}` }));
}

/** Serves `GET path` from `all` like the service: take/skip, default 20, max 100. */
function servePages(path: string, all: unknown[], { withTotal = false, bare = false } = {}) {
  server().route('GET', path, (request) => {
    const take = Number(request.query.take ?? 20);
    const skip = Number(request.query.skip ?? 0);
    const data = all.slice(skip, skip + take);
    return { json: bare ? data : withTotal ? { data, total: all.length, take, skip } : { data } };
  });
}

describe('iterate', () => {
  it('walks 250 invoices in exactly 3 requests of take=100 (skip 0, 100, 200)', async () => {
    servePages('/v1/invoices', invoices(250));
    const ids: string[] = [];
    for await (const item of client().invoices.iterate()) ids.push(item.id);
    expect(ids).toHaveLength(250);
    expect(new Set(ids).size).toBe(250);
    expect(ids[249]).toBe('inv_249');
    expect(server().requests.map((r) => r.query)).toEqual([
      { take: '100', skip: '0' },
      { take: '100', skip: '100' },
      { take: '100', skip: '200' },
    ]);
  });

  it('stops at total without asking for an empty page', async () => {
    servePages('/v1/invoices', invoices(200), { withTotal: true });
    let count = 0;
    for await (const _ of client().invoices.iterate()) count++;
    expect(count).toBe(200);
    expect(server().requests).toHaveLength(2);
  });

  it('walks bare-array pages too, and starts at skip', async () => {
    servePages(
      '/v1/customers',
      invoices(130).map((i) => ({ id: i.id, username: i.id })),
      { bare: true },
    );
    const ids: string[] = [];
    for await (const item of client().customers.iterate({ skip: 20 })) ids.push(item.id);
    expect(ids).toHaveLength(110);
    expect(server().requests.map((r) => r.query.skip)).toEqual(['20', '120']);
  });

  it('stops early when the loop breaks', async () => {
    servePages('/v1/invoices', invoices(250));
    for await (const item of client().invoices.iterate()) if (item.id === 'inv_5') break;
    expect(server().requests).toHaveLength(1);
  });

  it('keeps webhook event filters on every page', async () => {
    servePages(
      '/v1/webhook-events',
      Array.from({ length: 150 }, (_, n) => ({ ...webhookEventRecord, id: `whe_${n}` })),
    );
    let count = 0;
    for await (const _ of client().webhookEvents.iterate({ status: 'failed' })) count++;
    expect(count).toBe(150);
    expect(server().requests.map((r) => r.query)).toEqual([
      { take: '100', skip: '0', status: 'failed' },
      { take: '100', skip: '100', status: 'failed' },
    ]);
  });

  it('throws at the first page that brings nothing new (a service that ignores skip) instead of walking forever', async () => {
    const first = invoices(100);
    // Past 20 requests the server gives up, so that a walk that does not stop by itself fails this test rather than hang it.
    server().route('GET', '/v1/invoices', () =>
      server().requests.length > 20
        ? { status: 400, json: { error: { message: 'cut off by the test' } } }
        : { json: { data: first, total: 100_000 } },
    );
    const ids: string[] = [];
    const error = await (async () => {
      for await (const item of client().invoices.iterate()) ids.push(item.id);
    })().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ApiResponseValidationError);
    expect((error as Error).message).toBe(
      'payhooks: The list page at skip=100 holds only records already read (the first: inv_0): the service seems to ignore skip. ' +
        'The walk stopped after 2 requests rather than read the same records again.',
    );
    expect(ids).toHaveLength(100);
    expect(server().requests).toHaveLength(2);
  });

  it('still takes a page that repeats some records (a record deleted mid-walk shifts the next ones back by one)', async () => {
    const all = invoices(250);
    server().route('GET', '/v1/invoices', (request) => {
      const skip = Number(request.query.skip);
      // The second page starts one record early, as after a deletion before the cursor.
      const from = skip === 100 ? 99 : skip;
      return { json: { data: all.slice(from, from + 100) } };
    });
    const ids: string[] = [];
    for await (const item of client().invoices.iterate()) ids.push(item.id);
    expect(ids).toHaveLength(250);
    expect(ids.filter((id) => id === 'inv_99')).toHaveLength(2);
    expect(server().requests).toHaveLength(3);
  });
});
