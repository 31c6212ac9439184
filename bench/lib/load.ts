import { createHmac } from 'node:crypto';
import autocannon from 'autocannon';
import { exampleEvent } from '../../src/events/index.js';

export const SECRET = 'bench-endpoint-secret';
/** The size of every delivery's body, as the issue asks: a 2 KB signed body. */
export const BODY_BYTES = 2048;

/**
 * An INVOICE_PAID delivery padded to exactly BODY_BYTES, with slots for its eventId and its invoice id (so that
 * the events of a run belong to many resources, as a subscription run's do).
 */
function template(): { before: string; between: string[]; after: string } {
  const event = exampleEvent('INVOICE_PAID', { eventId: 'evt_@@@@@@@@@@@@@@@@@@@@' });
  const invoiceId = event.data.invoiceId;
  const json = JSON.stringify({
    ...event,
    data: {
      ...event.data,
      invoice: { ...event.data.invoice, metadata: [...(event.data.invoice?.metadata ?? []), { key: 'note', value: '' }] },
    },
  });
  const withSlots = json.replaceAll(`"${invoiceId}"`, '"inv_%%%%%%%%%%%%%%%%%%%%"');
  const padded = withSlots.replace('"value":""', `"value":"${'x'.repeat(BODY_BYTES - Buffer.byteLength(withSlots))}"`);
  const parts = padded.split(/@{20}|%{20}/);
  return { before: parts[0]!, between: parts.slice(1, -1), after: parts.at(-1)! };
}

const shape = template();

/** The body of delivery `n` of run `runId` (no `-` in it): ids of fixed width, so every body is BODY_BYTES long. */
export function deliveryBody(runId: string, n: number): string {
  const id = `${runId}-${n.toString(36)}`.padStart(20, '0');
  if (id.length > 20) throw new Error(`deliveryBody: run id ${runId} is too long for delivery ${n}`);
  let body = shape.before;
  for (const part of shape.between) body += id + part;
  return body + id + shape.after;
}

/** The default scheme's headers for `body`, signed now. */
export function signedHeaders(body: string): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', SECRET).update(`${timestamp}.`).update(body).digest('hex');
  return { 'content-type': 'application/json', 'x-webhook-timestamp': timestamp, 'x-webhook-signature': `v1=${signature}` };
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  sent: number;
  seconds: number;
}

export interface LoadOptions {
  url: string;
  connections: number;
  /** Run for this long… */
  durationSeconds?: number;
  /** …or until this many requests are answered. */
  amount?: number;
  /** Share of deliveries that repeat an eventId already sent in this run (0 to 1). */
  duplicateShare: number;
  /** Unique per run, so that no two runs share an eventId. */
  runId: string;
}

/**
 * Sends signed deliveries with autocannon: each request's body is made (and signed) when it is sent, with a
 * fresh eventId, or with probability `duplicateShare` the id of an earlier delivery of the run.
 */
export async function sendDeliveries(options: LoadOptions): Promise<LoadResult> {
  let next = 0;
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    ...(options.amount === undefined ? { duration: options.durationSeconds ?? 10 } : { amount: options.amount }),
    timeout: 30,
    method: 'POST',
    requests: [
      {
        setupRequest: (request) => {
          const n = next > 0 && Math.random() < options.duplicateShare ? Math.floor(Math.random() * next) : next++;
          const body = deliveryBody(options.runId, n);
          return { ...request, method: 'POST', body, headers: signedHeaders(body) };
        },
      },
    ],
  });
  const answered = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'];
  return {
    requestsPerSecond: answered / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    sent: result.requests.sent,
    seconds: result.duration,
  };
}
