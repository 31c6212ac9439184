import { describe, expect, it } from 'vitest';
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
});
