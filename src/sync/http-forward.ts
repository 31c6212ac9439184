import PQueue from 'p-queue';
import type { ApiClient } from '../client/api-client.js';
import { z } from 'zod';
import type { EventType } from '../events/index.js';
import type { Payhooks } from '../payhooks.js';
import { createDefaultScheme } from '../signature/default-scheme.js';
import { durationMs, eventTypesField, httpUrlField, secretField, sinkNameField } from './config-fields.js';
import { idempotencyKey } from './connector.js';
import { forwardDocument } from './forward-document.js';
import { defineSinkKind, registerSink, type Sink } from './sink.js';
import { describeUrl } from '../internal/describe-url.js';
import { durationRangeProblem } from '../internal/duration.js';
import { PayhooksError } from '../errors.js';
import { createHttpHelper, HTTP_DEFAULT_TIMEOUT_MS, headerProblem, urlCredentialsProblem } from './http-helper.js';
import { bindActiveContext } from '../internal/tracing.js';

/** One URL the HTTP forward sink posts events to. */
export interface ForwardTarget {
  /** Completion is recorded under `forward:<name>`. */
  name: string;
  url: string;
  /** The target's own signing secret: the body is signed with the default scheme, as the service signs its deliveries. */
  secret: string;
  /** Default 10 s. */
  timeoutMs?: number | undefined;
  /** Requests in flight to this target from one process. Default 4. */
  concurrency?: number | undefined;
  /** Requests started per second to this target from one process, 0.01 to 10,000 (0.5: one every 2 s); unset: no limit. */
  ratePerSecond?: number | undefined;
  /** The types it receives. Default every event, types newer than this payhooks included. */
  eventTypes?: readonly EventType[] | undefined;
  /** Extra headers (an API gateway's key, say). */
  headers?: Record<string, string> | undefined;
}

/** The defaults of a forward target. */
export const FORWARD_DEFAULTS = { timeoutMs: HTTP_DEFAULT_TIMEOUT_MS, concurrency: 4 } as const;

/** The values a forward target accepts (docs/sinks.md#http-forward); the configuration file is checked against them too. */
export const FORWARD_LIMITS = {
  /** 100 ms at least (the configuration file's durations go down to 1s), ten minutes at most (a worker slot is held meanwhile). */
  timeoutMs: { minMs: 100, maxMs: 600_000 },
  concurrency: { min: 1, max: 256 },
  /** One request every 100 s at the slowest; the fastest is beyond any target's capacity anyway. */
  ratePerSecond: { min: 0.01, max: 10_000 },
} as const;

/** Headers the sink writes on every request (the signature's, with their default names); a target's `headers` cannot replace them. */
export const FORWARD_OWN_HEADERS = [
  'content-type',
  'idempotency-key',
  'x-payhooks-event-id',
  'x-payhooks-event-type',
  'x-webhook-timestamp',
  'x-webhook-signature',
] as const;

/** The most of a target's 2xx answer read (it is not used); the rest is discarded unread. */
const FORWARD_ANSWER_BYTES = 4096;

/**
 * What is wrong with a forward target's settings, one line per setting (`url: …`), never repeating a secret or a
 * header's value; empty when nothing is.
 *
 * @example
 * forwardTargetProblems({ name: 'erp', url: 'https://u:p@erp.example.com', secret: 's', ratePerSecond: 0 })
 * // ['url: holds credentials (user:password@) …', 'ratePerSecond: must be between 0.01 and 10000 …']
 */
export function forwardTargetProblems(target: ForwardTarget): string[] {
  const problems: string[] = [];
  let url: URL | undefined;
  try {
    url = new URL(target.url);
  } catch {
    // reported below
  }
  if (!url || !['http:', 'https:'].includes(url.protocol)) problems.push('url: expected an http:// or https:// URL');
  const credentials = urlCredentialsProblem(target.url);
  if (credentials) problems.push(`url: ${credentials}`);
  if (typeof target.secret !== 'string' || target.secret === '') problems.push('secret: must not be empty');
  if (target.timeoutMs !== undefined) {
    const problem = durationRangeProblem(target.timeoutMs, FORWARD_LIMITS.timeoutMs);
    if (problem) problems.push(`timeout: ${problem}, not ${String(target.timeoutMs)} ms`);
  }
  const { concurrency, ratePerSecond } = target;
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= FORWARD_LIMITS.concurrency.max)) {
    problems.push(`concurrency: must be a whole number from 1 to ${FORWARD_LIMITS.concurrency.max}, not ${String(concurrency)}`);
  }
  if (ratePerSecond !== undefined) {
    const problem = ratePerSecondProblem(ratePerSecond);
    if (problem) problems.push(`ratePerSecond: ${problem}`);
  }
  for (const [name, value] of Object.entries(target.headers ?? {})) {
    const problem = forwardHeaderProblem(name, value);
    if (problem) problems.push(`headers.${name}: ${problem}`);
  }
  return problems;
}

/**
 * Why a forward target's rate cannot be used; undefined when it can.
 *
 * @example
 * ratePerSecondProblem(0.5) // undefined: one request every 2 s
 */
export function ratePerSecondProblem(rate: number): string | undefined {
  const { min, max } = FORWARD_LIMITS.ratePerSecond;
  if (Number.isFinite(rate) && rate >= min && rate <= max) return undefined;
  return `must be between ${min} (one request every ${1 / min} s) and ${max} requests a second, not ${String(rate)}`;
}

/**
 * Why a header of a forward target cannot be sent as given; undefined when it can. The value is never repeated.
 *
 * @example
 * forwardHeaderProblem('idempotency-key', 'x') // 'set by payhooks on every forwarded request; …'
 */
export function forwardHeaderProblem(name: string, value: unknown): string | undefined {
  const lower = name.toLowerCase();
  if ((FORWARD_OWN_HEADERS as readonly string[]).includes(lower)) {
    return 'set by payhooks on every forwarded request (the document, its signature and its ids), so it cannot be given';
  }
  // fetch would drop them without a word; in a configuration file they can only be a mistake.
  if (lower === 'host' || lower === 'content-length') return `${name} is set by the HTTP client itself and cannot be given`;
  return headerProblem(name, value);
}

/**
 * The p-queue settings that start at most `rate` requests a second: whole rates as that many a second, others
 * as one request every 1/rate seconds (0.5: one every 2 s; 2.5: one every 400 ms), since p-queue counts whole requests.
 *
 * @example
 * rateLimitSettings(20) // { intervalCap: 20, interval: 1000 }
 * rateLimitSettings(0.5) // { intervalCap: 1, interval: 2000 }
 */
export function rateLimitSettings(rate: number): { intervalCap: number; interval: number } {
  if (Number.isInteger(rate)) return { intervalCap: rate, interval: 1000 };
  return { intervalCap: 1, interval: Math.max(1, Math.round(1000 / rate)) };
}

/** One entry of `forward` (or a `sinks` entry of kind `http-forward`) in the configuration file. */
const forwardTargetSchema = z
  .strictObject({
    /** Completion is recorded under `forward:<name>`; keep it when the URL changes. */
    name: sinkNameField,
    url: httpUrlField,
    /** The target's own signing secret (default scheme). */
    secret: secretField,
    /** Default 10s; 1s to 10m. */
    timeout: durationMs('10s', 'forward.timeout').optional(),
    concurrency: z.number().int().min(1).max(FORWARD_LIMITS.concurrency.max).optional(),
    /** 0.01 to 10,000; a fraction spaces requests out (0.5: one every 2 s). */
    ratePerSecond: z
      .number()
      .superRefine((rate, ctx) => {
        const problem = ratePerSecondProblem(rate);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
    eventTypes: eventTypesField.optional(),
    /** Headers every request carries; each name and value checked, values never repeated (they are often keys). */
    headers: z
      .record(z.string(), z.string())
      .superRefine((headers, ctx) => {
        for (const [name, value] of Object.entries(headers)) {
          const problem = forwardHeaderProblem(name, value);
          if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
        }
      })
      .optional(),
  })
  .transform(
    ({ timeout, ...target }): ForwardTarget => ({
      name: target.name,
      url: target.url,
      secret: target.secret,
      timeoutMs: timeout,
      concurrency: target.concurrency,
      ratePerSecond: target.ratePerSecond,
      eventTypes: target.eventTypes,
      headers: target.headers,
    }),
  );

/**
 * The HTTP forward sink of one target, as the handler `forward:<name>`: each event is POSTed as a JSON document
 * (docs/sinks.md#the-document) signed with the target's secret. 5xx, 408, 429 (after its `Retry-After`) and
 * connection failures are retried with backoff; another 4xx puts the event in dead letters for this target only.
 * Settings that would fail every request are refused here, not at the first event.
 */
function forwardSink(target: ForwardTarget): Sink {
  const problems = forwardTargetProblems(target);
  if (problems.length) {
    throw new PayhooksError(
      `The forward target ${JSON.stringify(target.name)} cannot be used:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
  }
  const sink = `forward:${target.name}`;
  const scheme = createDefaultScheme({ secrets: [target.secret] });
  const queue = new PQueue({
    concurrency: target.concurrency ?? FORWARD_DEFAULTS.concurrency,
    ...(target.ratePerSecond === undefined ? {} : rateLimitSettings(target.ratePerSecond)),
  });
  const where = describeUrl(target.url);
  return {
    kind: 'http-forward',
    name: sink,
    eventTypes: target.eventTypes,
    describe: `HTTP forward ${target.name} to ${where}`,
    async handle(event, ctx, state) {
      const body = JSON.stringify(forwardDocument(event, await state(), sink, ctx.receivedAt));
      const http = createHttpHelper({ signal: ctx.signal, timeoutMs: target.timeoutMs, userAgent: `payhooks ${sink}` });
      // A step: a replay after the target acknowledged does not send again (unless --redo-effects). Idempotent: the
      // target gets the same idempotency-key on every send of the event, so an unknown outcome is simply sent again.
      const response = await ctx.effect(
        'send',
        () =>
          queue
            .add(
              // Bound to this event's span: p-queue starts a waiting task from whichever task finished before it.
              bindActiveContext(() => {
                // Signed when sent, not when queued: a wait for the rate limit must not age the timestamp.
                const signature = scheme.sign({ rawBody: body });
                return http.request(target.url, {
                  method: 'POST',
                  body,
                  maxResponseBytes: FORWARD_ANSWER_BYTES,
                  headers: {
                    ...target.headers,
                    ...signature,
                    'content-type': 'application/json',
                    'idempotency-key': idempotencyKey(sink, event.eventId),
                    'x-payhooks-event-id': event.eventId,
                    'x-payhooks-event-type': event.eventType,
                  },
                });
              }),
              { signal: ctx.signal },
            )
            .then((answer) => ({ status: answer.status })),
        { idempotent: true },
      );
      ctx.logger.debug({ target: where, status: response.status, attempt: ctx.attempt }, 'forwarded');
    },
    async close() {},
  };
}

/** The `http-forward` sink kind (docs/sinks.md#http-forward). */
export const httpForwardSink = defineSinkKind({
  kind: 'http-forward',
  prefix: 'forward',
  schema: forwardTargetSchema,
  create: forwardSink,
});

/** Options of {@link registerHttpForward} that concern every target. */
export interface ForwardOptions {
  /** The mirror's schema when it runs: the document's resource falls back to its row without an API key. */
  mirrorSchema?: string | undefined;
}

/**
 * Registers one HTTP forward target as the handler `forward:<name>` (see the `http-forward` sink kind).
 *
 * @example
 * await registerHttpForward(hooks, { name: 'erp', url: 'https://erp.example.com/inbound/payhooks', secret: process.env.ERP_SECRET! });
 */
export async function registerHttpForward(hooks: Payhooks<ApiClient>, target: ForwardTarget, options: ForwardOptions = {}): Promise<void> {
  const sink = forwardSink(target);
  registerSink(hooks, sink, { store: await hooks.ready(), mirrorSchema: options.mirrorSchema });
}
