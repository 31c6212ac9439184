// An existing Express 5 app with payhooks mounted as middleware (receive only: no handlers, no worker here).
import express from 'express';
import { pino } from 'pino';
import { createPayhooks } from '../../src/index.js';

const hooks = createPayhooks({
  secret: process.env.PAYHOOKS_WEBHOOK_SECRET!,
  database: { url: process.env.DATABASE_URL, schema: process.env.PAYHOOKS_SCHEMA },
  logger: pino({ level: 'warn' }),
});
await hooks.ready();
const app = express();
app.get('/healthz', (_req, res) => {
  res.json({ ok: true });
});
app.post('/webhooks', hooks.express());
app.listen(Number(process.env.PORT), '127.0.0.1');
