// The hand-written baseline of the issue: what a user writes in an afternoon. Express 5, raw-body, an HMAC of the
// default scheme compared with timingSafeEqual, and one INSERT … ON CONFLICT DO NOTHING per request on a pg Pool.
import { createHmac, timingSafeEqual } from 'node:crypto';
import express from 'express';
import pg from 'pg';
import getRawBody from 'raw-body';

const secret = process.env.PAYHOOKS_WEBHOOK_SECRET!;
const schema = process.env.BENCH_SCHEMA!;
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query(`create schema if not exists "${schema}"`);
await pool.query(
  `create table if not exists "${schema}".baseline_events (
     event_id text primary key, event_type text not null, body text not null, received_at timestamptz not null default now())`,
);

const app = express();
app.get('/healthz', (_req, res) => {
  res.json({ ok: true });
});
app.post('/webhooks', async (req, res) => {
  const raw = await getRawBody(req, { limit: '1mb' });
  const timestamp = String(req.headers['x-webhook-timestamp'] ?? '');
  const given = Buffer.from(String(req.headers['x-webhook-signature'] ?? '').replace(/^v1=/, ''), 'hex');
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(raw).digest();
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    res.status(401).json({ error: 'bad signature' });
    return;
  }
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) {
    res.status(401).json({ error: 'stale' });
    return;
  }
  const event = JSON.parse(raw.toString('utf8')) as { eventId: string; eventType: string };
  const result = await pool.query(
    `insert into "${schema}".baseline_events (event_id, event_type, body) values ($1, $2, $3) on conflict do nothing`,
    [event.eventId, event.eventType, raw.toString('utf8')],
  );
  res.json(result.rowCount === 1 ? { received: true } : { received: true, duplicate: true });
});
app.listen(Number(process.env.PORT), '127.0.0.1');
