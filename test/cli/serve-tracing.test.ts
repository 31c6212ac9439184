// Issue 28 end to end: `payhooks serve` as a process on PostgreSQL (so its worker runs in a child process), tracing
// turned on by the standard OTEL_* variables, spans exported over OTLP/HTTP (JSON) to a collector this test runs on
// loopback. One delivery of a CUSTOMER_CREATED whose handler reads the simulator's API and whose forward target fails
// once: the spans of both processes form the tree of docs/tracing.md, the retry's attempt links to the receive span,
// the target got the traceparent of its request's span, and no attribute holds an email, a phone number, the body or
// a secret.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { startSimulator } from '../../src/simulator/index.js';
import { openDatabase } from '../../src/store/database.js';
import { signedRequest } from '../../src/testing/index.js';
import { collect, spawnCli, waitForLog } from '../helpers/cli.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';
import { dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const handlers = fileURLToPath(new URL('../fixtures/tracing-handlers.mjs', import.meta.url));
const SECRET = 'whsec_serve_tracing';
const TARGET_SECRET = 'whsec_serve_tracing_target';
const API_KEY = 'sk_test_serve_tracing';
const EMAIL = 'grace.tracing@example.com';
const PHONE = '+525587654321';
const UPSTREAM_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const UPSTREAM_SPAN = '00f067aa0ba902b7';

/** A span as the OTLP/JSON export carries it, its attributes flattened, with the process role of its resource. */
interface ExportedSpan {
  role: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  status: { code?: number; message?: string };
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type OtlpAttribute = { key: string; value: OtlpValue };

function flatten(attributes: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const flat: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? []) {
    flat[key] = value.stringValue ?? value.boolValue ?? value.doubleValue ?? (value.intValue === undefined ? '' : Number(value.intValue));
  }
  return flat;
}

/** An OTLP/HTTP collector on loopback that keeps every span exported to it (JSON encoding only). */
async function collector() {
  const spans: ExportedSpan[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: {
          resource: { attributes: OtlpAttribute[] };
          scopeSpans: { spans: (Omit<ExportedSpan, 'attributes' | 'role'> & { attributes: OtlpAttribute[] })[] }[];
        }[];
      };
      for (const resourceSpans of body.resourceSpans) {
        const role = String(flatten(resourceSpans.resource.attributes)['payhooks.role']);
        for (const scope of resourceSpans.scopeSpans) {
          for (const span of scope.spans) spans.push({ ...span, role, attributes: flatten(span.attributes), links: span.links ?? [] });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { ...(await listen(server)), spans };
}

// OTLP's SpanKind numbers (one more than the API's).
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

describe.skipIf(!pgUrl)('payhooks serve with OTEL_TRACES_EXPORTER=otlp', () => {
  const schema = uniqueSchema('tracing');
  afterAll(async () => {
    await dispose(await openDatabase({ url: pgUrl!, schema }));
  });

  it('exports one tree per process: receive in serve, each attempt in the worker child linked to it, handler, sink and client spans below', {
    timeout: 120_000,
  }, async () => {
    const simulator = await startSimulator();
    const otlp = await collector();
    const received: { traceparent: string | undefined; status: number }[] = [];
    const target = await listen(
      createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          const status = received.length === 0 ? 503 : 200;
          received.push({ traceparent: req.headers.traceparent as string | undefined, status });
          res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
        });
      }),
    );
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-tracing-'));
    writeFileSync(
      join(dir, 'payhooks.config.json'),
      JSON.stringify({
        forward: [{ name: 'erp', url: `${target.url}/inbound`, secret: TARGET_SECRET }],
        worker: { pollIntervalMs: 100, backoff: { baseMs: 200, maxMs: 400 } },
      }),
    );
    const api = createClient({ apiKey: API_KEY, environment: simulator.url, maxRetries: 0 });
    const customer = await api.customers.create({ username: 'grace-tracing', email: EMAIL, phoneNumber: PHONE });
    const serve = spawnCli(
      ['serve', '--handlers', handlers],
      {
        PAYHOOKS_WEBHOOK_SECRET: SECRET,
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: pgUrl!,
        PAYHOOKS_SCHEMA: schema,
        PAYHOOKS_API_KEY: API_KEY,
        PAYHOOKS_API_URL: simulator.url,
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/v1/traces`,
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
      dir,
    );
    const done = collect(serve, 110_000);
    const event = exampleEvent('CUSTOMER_CREATED', {
      eventId: 'evt_serve_tracing',
      data: { id: customer.id, email: EMAIL, phoneNumber: PHONE },
    });
    const request = signedRequest(event, { secret: SECRET });
    try {
      const url = String((await waitForLog(serve, /receiving webhooks/, 60_000)).url);
      const answer = await fetch(url, {
        method: 'POST',
        headers: { ...request.headers, traceparent: `00-${UPSTREAM_TRACE}-${UPSTREAM_SPAN}-01` },
        body: request.rawBody,
      });
      expect(answer.status).toBe(200);
      const attempts = () => otlp.spans.filter((s) => s.name === 'webhook.process');
      await waitFor(() => attempts().some((s) => s.attributes['payhooks.event.outcome'] === 'done'), 'the second attempt exported', 60_000);
    } finally {
      serve.kill('SIGTERM');
    }
    const exit = await done;
    expect(exit.code, exit.stderr).toBe(0);
    await target.close();
    await otlp.close();
    await simulator.close();

    const spans = otlp.spans;
    const named = (name: string) => spans.filter((s) => s.name === name);
    const childrenOf = (parent: ExportedSpan) => spans.filter((s) => s.parentSpanId === parent.spanId && s.traceId === parent.traceId);

    // serve's own process: the receive span, the root of a trace of its own linked to the one the delivery carried
    // (docs/tracing.md#whose-trace-a-delivery-joins), with its group commit.
    const [receive] = named('webhook.receive');
    expect(receive).toMatchObject({ role: 'receiver', kind: SERVER, links: [{ traceId: UPSTREAM_TRACE, spanId: UPSTREAM_SPAN }] });
    expect(receive!.traceId).not.toBe(UPSTREAM_TRACE);
    expect(receive!.parentSpanId || undefined).toBeUndefined();
    expect(receive!.attributes).toMatchObject({
      'http.response.status_code': 200,
      'payhooks.delivery.outcome': 'stored',
      'messaging.message.id': event.eventId,
      'payhooks.event.type': 'CUSTOMER_CREATED',
    });
    expect(childrenOf(receive!).map((s) => s.name)).toEqual(['payhooks.group_commit']);

    // The worker child: two attempts, each a trace of its own linked to the receive span.
    const attempts = named('webhook.process').sort(
      (a, b) => Number(a.attributes['payhooks.event.attempt']) - Number(b.attributes['payhooks.event.attempt']),
    );
    expect(attempts.map((s) => [s.role, s.attributes['payhooks.event.attempt'], s.attributes['payhooks.event.outcome']])).toEqual([
      ['worker', 1, 'retry'],
      ['worker', 2, 'done'],
    ]);
    for (const attempt of attempts) {
      expect(attempt.kind).toBe(CONSUMER);
      expect(attempt.parentSpanId || undefined).toBeUndefined();
      expect(attempt.links).toMatchObject([{ traceId: receive!.traceId, spanId: receive!.spanId }]);
    }
    const [first, second] = attempts as [ExportedSpan, ExportedSpan];
    const firstChildren = childrenOf(first);
    expect(firstChildren.map((s) => s.name).sort()).toEqual(['webhook.handler', 'webhook.sink']);
    const crm = firstChildren.find((s) => s.name === 'webhook.handler')!;
    expect(crm.attributes['payhooks.handler.name']).toBe('crm');
    expect(childrenOf(crm)).toMatchObject([{ name: 'GET', kind: CLIENT, attributes: { 'http.response.status_code': 200 } }]);
    const sinkFirst = firstChildren.find((s) => s.name === 'webhook.sink')!;
    expect(sinkFirst.attributes).toMatchObject({ 'payhooks.handler.name': 'forward:erp', 'payhooks.sink.kind': 'http-forward' });
    // The POST is the forward's effect step `send` (docs/effects.md#sinks-and-connectors), a span of its own.
    const sendFirst = childrenOf(sinkFirst).find((s) => s.name === 'effect send')!;
    const failedPost = childrenOf(sendFirst).find((s) => s.name === 'POST');
    expect(failedPost).toMatchObject({ kind: CLIENT, attributes: { 'http.response.status_code': 503, 'error.type': '503' } });
    const secondChildren = childrenOf(second);
    expect(secondChildren.map((s) => s.name)).toEqual(['webhook.sink']);
    const sendSecond = childrenOf(secondChildren[0]!).find((s) => s.name === 'effect send')!;
    const post = childrenOf(sendSecond).find((s) => s.name === 'POST');
    expect(post?.attributes['http.response.status_code']).toBe(200);

    // The forward target got the traceparent of each request's own span.
    expect(received.map((r) => r.status)).toEqual([503, 200]);
    expect(received.map((r) => r.traceparent)).toEqual([failedPost!, post!].map((s) => `00-${s.traceId}-${s.spanId}-01`));

    // Nothing personal or secret in any span.
    const body = Buffer.from(request.rawBody).toString('utf8');
    for (const span of spans) {
      for (const text of [span.name, span.status.message ?? '', ...Object.values(span.attributes).map(String)]) {
        for (const forbidden of [EMAIL, PHONE, SECRET, TARGET_SECRET, API_KEY, body]) expect(text).not.toContain(forbidden);
        expect(text).not.toMatch(/@example\.com/);
      }
    }
  });
});
