// Spans through @opentelemetry/api only (docs/tracing.md). The API is an optional peer dependency: loaded with
// require, in a try, so that payhooks runs without it (every helper below then does nothing), and so that no
// top-level await stands in the way of require(esm). Two copies of the API (this CommonJS one and an app's ES module
// one) share one registry: the API keeps its tracer provider, context manager and propagator on a global symbol.
import { createRequire } from 'node:module';
import type * as OtelApi from '@opentelemetry/api';
import type { Attributes, Context, Link, Span, SpanContext, SpanOptions, Tracer, TracerProvider } from '@opentelemetry/api';
import { capText, describeThrown } from './scrub.js';
import { describeUrl } from './describe-url.js';

type Api = typeof OtelApi;

const api: Api | undefined = loadApi();

function loadApi(): Api | undefined {
  try {
    return createRequire(import.meta.url)('@opentelemetry/api') as Api;
  } catch {
    return undefined;
  }
}

/** The instrumentation scope of every payhooks span. */
export const TRACER_NAME = 'payhooks';

/** `SpanKind` of the API, as numbers, so that no value of it is needed where the API is absent. */
export const SPAN_KIND = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 } as const;
const STATUS_ERROR = 2;

let tracerOf: { provider: TracerProvider; tracer: Tracer } | undefined;

/**
 * payhooks' tracer: one lookup per span (the global provider, compared by identity), so a provider registered or
 * replaced after payhooks loaded (an SDK started later, a test's) is used from then on.
 */
function tracer(otel: Api): Tracer {
  const provider = otel.trace.getTracerProvider();
  if (tracerOf?.provider !== provider) tracerOf = { provider, tracer: provider.getTracer(TRACER_NAME) };
  return tracerOf.tracer;
}

/**
 * Whether spans can record: a tracer provider is registered with the API (an SDK started), now. The API's global
 * provider is a proxy whose delegate an SDK sets; until then every span it makes records nothing, and payhooks hands
 * out its own {@link NO_SPAN} instead, which costs nothing per call (the API's no-op spans and contexts were about
 * 1.7 KB of garbage per event in a worker draining no-op events). A provider of another copy of the API counts as
 * registered.
 */
function recording(otel: Api): boolean {
  const provider = otel.trace.getTracerProvider();
  return !(provider instanceof otel.ProxyTracerProvider) || provider.getDelegateTracer(TRACER_NAME) !== undefined;
}

/** A span that records nothing: what the helpers hand out where the API is not installed or no SDK is registered. */
const NO_SPAN: Span = {
  spanContext: () => ({ traceId: '00000000000000000000000000000000', spanId: '0000000000000000', traceFlags: 0 }),
  setAttribute: () => NO_SPAN,
  setAttributes: () => NO_SPAN,
  addEvent: () => NO_SPAN,
  addLink: () => NO_SPAN,
  addLinks: () => NO_SPAN,
  setStatus: () => NO_SPAN,
  updateName: () => NO_SPAN,
  end: () => undefined,
  isRecording: () => false,
  recordException: () => undefined,
};

/**
 * Where a span starts: under the active span (default); under the context a request's headers carry, unless a span is
 * active already (then under it); under the active span too, but only linked to the context the headers carry, never
 * its child (`linked`: headers a stranger may have written, docs/tracing.md#whose-trace-a-delivery-joins); or as the
 * root of a trace of its own.
 */
export type SpanParent = 'active' | 'headers' | 'linked' | 'root';

/**
 * Options of {@link inSpan}: the API's own span options (handed to it as they are, so that a constant options object
 * costs nothing per call) and where the span starts.
 */
export interface InSpanOptions extends SpanOptions {
  kind?: (typeof SPAN_KIND)[keyof typeof SPAN_KIND] | undefined;
  /** Spans this one is linked to (not a child of): for an attempt, its delivery's receive span. */
  links?: Link[] | undefined;
  /** Default `active`; `headers` and `linked` take the context from {@link inSpan}'s `carrier`. */
  parent?: SpanParent | undefined;
  /** `fn` sets the span's status itself when it fails (an HTTP client span, by status): a rejection leaves it as is. */
  ownErrors?: boolean | undefined;
}

/** A request's headers, as the receiver has them: where a `headers` parent is read from. */
export type HeaderCarrier = Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * Runs `fn` in a new span, active while it runs (so that spans and log lines made inside are its children), and ends
 * the span when `fn` settles; a rejection sets the span's status to error (see {@link failSpan}) and is passed on.
 * Without the API, or with no SDK registered, `fn` gets a span that records nothing, and no context is made for it.
 *
 * @example
 * await inSpan('webhook.process', { kind: SPAN_KIND.consumer, parent: 'root', root: true }, async (span) => { … });
 */
export async function inSpan<T>(name: string, options: InSpanOptions, fn: (span: Span) => Promise<T>, carrier?: HeaderCarrier): Promise<T> {
  const otel = api;
  if (!otel || !recording(otel)) return fn(NO_SPAN);
  let context: Context;
  let spanOptions: SpanOptions = options;
  if (options.parent === 'headers') {
    // Under the span already active (an app's HTTP instrumentation made one from the same headers), else under the
    // context the headers carry.
    const active = otel.context.active();
    context = otel.trace.getSpan(active) || carrier === undefined ? active : otel.propagation.extract(otel.ROOT_CONTEXT, carrier);
  } else if (options.parent === 'linked') {
    // The context the headers carry (its tracestate and sampled flag too) only as a link: neither the trace the span
    // joins nor the sampler's decision is theirs. The messaging conventions link a message's context the same way.
    context = otel.context.active();
    const incoming = carrier === undefined ? undefined : otel.trace.getSpanContext(otel.propagation.extract(otel.ROOT_CONTEXT, carrier));
    if (incoming && otel.trace.isSpanContextValid(incoming))
      spanOptions = { ...options, links: [...(options.links ?? []), { context: incoming }] };
  } else if (options.parent === 'root') context = otel.ROOT_CONTEXT;
  else context = otel.context.active();
  return tracer(otel).startActiveSpan(name, spanOptions, context, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      if (!options.ownErrors) failSpan(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * Marks `span` as failed: status error, with the error's message scrubbed of emails, phone numbers and keys (as log
 * lines are) and capped at 1 KB, and `error.type` (the OpenTelemetry attribute) set to `type` or the error's name.
 * No stack is recorded.
 */
export function failSpan(span: Span, error: unknown, type?: string): void {
  if (!span.isRecording()) return;
  const name = error instanceof Error ? error.name : typeof error;
  span.setAttribute('error.type', type ?? name);
  span.setStatus({ code: STATUS_ERROR, message: capText(describeThrown(error), 1024) });
}

/** Sets `span`'s status to error with a message payhooks wrote (not an error's, which might hold personal data). */
export function markSpanFailed(span: Span, errorType: string, message?: string): void {
  if (!span.isRecording()) return;
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: STATUS_ERROR, message });
}

/**
 * Renames the active span and adds `attributes` to it, when it records: how a sink tells that the handler span it
 * runs in is a sink's (`webhook.sink`).
 */
export function describeActiveSpan(name: string | undefined, attributes: Attributes): void {
  const span = api?.trace.getActiveSpan();
  if (!span?.isRecording()) return;
  if (name !== undefined) span.updateName(name);
  span.setAttributes(attributes);
}

/**
 * Runs `fn` in a span named `effect <name>` under the active span (a handler's): for each step of a handler's effects
 * (`ctx.effect`), so that a trace shows which effect ran, how long it took and whether it failed.
 *
 * @example
 * await withEffectSpan('erp.invoice', async () => erp.post(invoice), { 'payhooks.effect.key': key });
 */
export function withEffectSpan<T>(name: string, fn: () => Promise<T>, attributes?: Attributes): Promise<T> {
  return inSpan(`effect ${name}`, { attributes: { 'payhooks.effect.name': name, ...attributes } }, () => fn());
}

/**
 * Runs one HTTP request (`fn`) in a client span named after its method, as OpenTelemetry's HTTP conventions name a
 * request without a route template, and writes the span's context into `headers` first, so that the server joins the
 * trace. `url.full` is the URL without credentials or query (either may hold a secret); `resendCount` is
 * `http.request.resend_count` (the retries of one call). Set the answer's status with {@link endHttpClientSpan}, or
 * {@link failSpan} when there was none: `fn`'s rejection alone does not.
 *
 * @example
 * const response = await inHttpClientSpan('POST', url, headers, 0, async (span) => {
 *   const response = await fetch(url, { method: 'POST', headers });
 *   endHttpClientSpan(span, response.status);
 *   return response;
 * });
 */
export function inHttpClientSpan<T>(
  method: string,
  url: string,
  headers: Record<string, string>,
  resendCount: number,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (!api) return fn(NO_SPAN);
  return inSpan(method, CLIENT_SPAN, (span) => {
    if (span.isRecording()) {
      span.setAttribute('http.request.method', method);
      span.setAttribute('url.full', describeUrl(url));
      try {
        const { hostname, port, protocol } = new URL(url);
        span.setAttribute('server.address', hostname);
        span.setAttribute('server.port', port === '' ? (protocol === 'https:' ? 443 : 80) : Number(port));
      } catch {
        // Not a URL: the request fails on its own, and says so.
      }
      if (resendCount > 0) span.setAttribute('http.request.resend_count', resendCount);
    }
    // Replaced, not kept: a retry of the same call sends its own span's context.
    injectTraceContext(headers, true);
    return fn(span);
  });
}

const CLIENT_SPAN: InSpanOptions = { kind: SPAN_KIND.client, ownErrors: true };

/** Records the answer's status on an HTTP client span; 4xx and 5xx set it to error, as the conventions say for a client. */
export function endHttpClientSpan(span: Span, status: number): void {
  if (!span.isRecording()) return;
  span.setAttribute('http.response.status_code', status);
  if (status >= 400) markSpanFailed(span, String(status));
}

const TRACE_PARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = /^0+$/;

/**
 * `text` if it is a W3C `traceparent` (version 00) naming a valid trace and span, else undefined: what the receiver
 * keeps of the header a delivery arrived with when no SDK made a span of its own.
 *
 * @example
 * validTraceParent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01') // the same text
 */
export function validTraceParent(text: unknown): string | undefined {
  const value = Array.isArray(text) ? text[0] : text;
  if (typeof value !== 'string') return undefined;
  const match = TRACE_PARENT.exec(value.trim());
  if (!match || ZERO_TRACE.test(match[1]!) || ZERO_TRACE.test(match[2]!)) return undefined;
  return match[0];
}

/** The `traceparent` of `span`, or undefined when its context is not valid (no SDK, nothing to propagate). */
export function traceParentOf(span: Span): string | undefined {
  const { traceId, spanId, traceFlags } = span.spanContext();
  if (ZERO_TRACE.test(traceId) || ZERO_TRACE.test(spanId)) return undefined;
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * A link to the span a stored `traceparent` names, or an empty list when there is none (an event stored before
 * migration 012, or received without tracing).
 */
export function linksTo(traceParent: string | null | undefined): Link[] {
  const match = traceParent ? TRACE_PARENT.exec(traceParent) : null;
  if (!match) return [];
  const context: SpanContext = { traceId: match[1]!, spanId: match[2]!, traceFlags: Number.parseInt(match[3]!, 16), isRemote: true };
  return [{ context }];
}

/**
 * Writes the active trace context into `headers` through the registered propagator (`traceparent`, and `tracestate`
 * when there is one); a header already there is left alone unless `replace`. Nothing without an SDK.
 */
export function injectTraceContext(headers: Record<string, string>, replace = false): void {
  const otel = api;
  if (!otel) return;
  otel.propagation.inject(otel.context.active(), headers, replace ? REPLACING : KEEPING);
}

const REPLACING: OtelApi.TextMapSetter<Record<string, string>> = {
  set(carrier, key, value) {
    carrier[key] = value;
  },
};
const KEEPING: OtelApi.TextMapSetter<Record<string, string>> = {
  set(carrier, key, value) {
    if (carrier[key] === undefined) carrier[key] = value;
  },
};

/**
 * `fn` bound to the context active now: for work a queue starts later (p-queue runs a task from whichever task
 * finished before it), so that its spans still join the span that queued it.
 */
export function bindActiveContext<F extends (...args: never[]) => unknown>(fn: F): F {
  const otel = api;
  return otel ? otel.context.bind(otel.context.active(), fn) : fn;
}

/**
 * The ids of the active span, as log lines carry them (`trace_id`, `span_id`), or undefined when no span is active
 * or it belongs to no trace (no SDK).
 */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const span = api?.trace.getActiveSpan();
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  if (ZERO_TRACE.test(traceId)) return undefined;
  return { trace_id: traceId, span_id: spanId };
}

/** Whether `@opentelemetry/api` could be loaded (without it nothing is traced). */
export function tracingApiLoaded(): boolean {
  return api !== undefined;
}
