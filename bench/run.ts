// `npm run bench`: speed as ratios against a baseline measured in the same run, never as absolute
// thresholds. Each figure is the median of several rounds.
import { createHmac } from 'node:crypto';
import { pino } from 'pino';
import { exampleEvent } from '../src/events/index.js';
import { createReceiver } from '../src/receiver/receiver.js';
import { createDefaultScheme } from '../src/signature/index.js';
import { openDatabase } from '../src/store/database.js';
import { storeEvent } from '../src/store/inbox.js';
import { migrate } from '../src/store/migrate.js';

async function median(rounds: number, fn: () => Promise<void> | void): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const secret = 'bench-secret';
const scheme = createDefaultScheme({ secrets: ['old-secret', secret] });
const body = Buffer.from(JSON.stringify(exampleEvent('PAYMENT_COMPLETED')));
const timestamp = Math.floor(Date.now() / 1000);
const headers = { 'content-type': 'application/json', ...scheme.sign({ rawBody: body, timestamp, secret }) };

// 1. Verification against the bare HMAC it must compute (two secrets configured: the second matches).
const N = 20_000;
const hmacMs = await median(5, () => {
  for (let i = 0; i < N; i++) createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
});
const verifyMs = await median(5, () => {
  for (let i = 0; i < N; i++) scheme.verify({ headers, rawBody: body });
});

// 2. The whole receive path (verify, parse, envelope, store) against the bare insert, on embedded PGlite.
const store = await openDatabase({ dataDir: 'memory://', schema: 'bench' });
await migrate(store);
const receiver = createReceiver({ store, scheme, logger: pino({ level: 'silent' }) });
const M = 500;
let round = 0;
const insertMs = await median(3, async () => {
  round++;
  for (let i = 0; i < M; i++) {
    await storeEvent(store, {
      eventId: `base_${round}_${i}`,
      eventType: 'PAYMENT_COMPLETED',
      resourceKey: 'payment:p',
      rawBody: body.toString(),
      headers: {},
    });
  }
});
const receiveMs = await median(3, async () => {
  round++;
  for (let i = 0; i < M; i++) {
    const raw = Buffer.from(JSON.stringify({ ...JSON.parse(body.toString()), eventId: `recv_${round}_${i}` }));
    const signed = { 'content-type': 'application/json', ...scheme.sign({ rawBody: raw, timestamp, secret }) };
    await receiver.receive({ method: 'POST', headers: signed, rawBody: raw });
  }
});
await store.close();

const rows = [
  ['verify (2 secrets) vs one bare HMAC', verifyMs / hmacMs, `${((N / verifyMs) * 1000).toFixed(0)} verifications/s`],
  ['receive (sign+verify+parse+store) vs bare insert, PGlite', receiveMs / insertMs, `${((M / receiveMs) * 1000).toFixed(0)} deliveries/s`],
] as const;
console.log(`body: ${body.length} bytes; node ${process.version}`);
for (const [name, ratio, rate] of rows) console.log(`${name.padEnd(58)} ratio ${ratio.toFixed(2)}  (${rate})`);
