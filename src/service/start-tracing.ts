import type { Logger } from 'pino';
import { PayhooksError } from '../errors.js';
import type { ServiceConfig, ServiceRole, TracingExporter } from './service-config.js';

/**
 * The packages `serve` needs for tracing (docs/tracing.md#turning-it-on): optional, loaded only when tracing is on, so
 * that a service without them, or with tracing off, never loads them. The OTLP exporter only for `otlp`.
 */
export const TRACING_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/sdk-trace-node',
  '@opentelemetry/resources',
  '@opentelemetry/exporter-trace-otlp-http',
] as const;

/** The OpenTelemetry SDK as serve runs it: flushed and stopped with the service. */
export interface RunningTracing {
  /** Exports the spans still buffered and stops the SDK. */
  shutdown(): Promise<void>;
}

/** Tracing is on but a package it needs is not installed; the message names what to install. */
export class TracingSetupError extends PayhooksError {}

/**
 * Starts the OpenTelemetry SDK for this process when `config.tracing` names an exporter (the standard `OTEL_*`
 * variables, or the configuration file's `tracing.exporter`; resolveServiceConfig decides): a Node tracer provider
 * registered globally (AsyncLocalStorage context, W3C trace context propagation), each span batched to the OTLP/HTTP
 * exporter (which reads `OTEL_EXPORTER_OTLP_*`) or written by the console exporter. The resource is
 * `service.name` `payhooks` (`OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` win) and `payhooks.role`. Off: nothing
 * is loaded and undefined is returned. A missing package throws {@link TracingSetupError} naming the packages to install.
 *
 * @example
 * const tracing = await startTracing(config.tracing, { role: 'all', logger });
 * // … at shutdown, after the service stopped:
 * await tracing?.shutdown();
 */
export async function startTracing(
  tracing: ServiceConfig['tracing'],
  options: { role: ServiceRole; logger: Logger },
): Promise<RunningTracing | undefined> {
  const exporters = tracing.exporters;
  if (exporters.length === 0) return undefined;
  const { node, resources, otlp } = await loadTracingSdk(exporters);
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'payhooks', 'payhooks.role': options.role }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const spanProcessors = exporters.map((name) => {
    const exporter = name === 'otlp' && otlp ? new otlp.OTLPTraceExporter() : new node.ConsoleSpanExporter();
    return new node.BatchSpanProcessor(exporter);
  });
  const provider = new node.NodeTracerProvider({ resource, spanProcessors });
  provider.register();
  options.logger.info({ exporters, role: options.role }, 'tracing on: spans go to the OpenTelemetry exporters named');
  return {
    async shutdown() {
      await provider.shutdown().catch((err: unknown) => options.logger.warn({ err }, 'exporting the last spans failed'));
    },
  };
}

/**
 * Resolves once the SDK packages `exporters` need load, or rejects with the {@link TracingSetupError} that
 * {@link startTracing} would: what `payhooks doctor` checks.
 */
export async function checkTracingSdk(exporters: readonly TracingExporter[]): Promise<void> {
  await loadTracingSdk(exporters);
}

/**
 * Loads the SDK packages `exporters` need (the OTLP exporter only for `otlp`), or throws a {@link TracingSetupError}
 * naming the packages to install.
 */
async function loadTracingSdk(exporters: readonly TracingExporter[]) {
  const [node, resources, otlp] = await Promise.all([
    loadTracingPackage(() => import('@opentelemetry/sdk-trace-node'), '@opentelemetry/sdk-trace-node', exporters),
    loadTracingPackage(() => import('@opentelemetry/resources'), '@opentelemetry/resources', exporters),
    exporters.includes('otlp')
      ? loadTracingPackage(() => import('@opentelemetry/exporter-trace-otlp-http'), '@opentelemetry/exporter-trace-otlp-http', exporters)
      : undefined,
    // The SDK registers itself through the API: without it, payhooks' spans would go nowhere.
    loadTracingPackage(() => import('@opentelemetry/api'), '@opentelemetry/api', exporters),
  ]);
  return { node, resources, otlp };
}

/**
 * `importer`'s module, or a {@link TracingSetupError} naming the packages to install when `name` is not installed;
 * any other failure as it is.
 */
export async function loadTracingPackage<T>(importer: () => Promise<T>, name: string, exporters: readonly TracingExporter[]): Promise<T> {
  try {
    return await importer();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw err;
    const needed = TRACING_PACKAGES.filter((p) => p !== '@opentelemetry/exporter-trace-otlp-http' || exporters.includes('otlp'));
    throw new TracingSetupError(
      `Tracing is on (exporter ${exporters.join(', ')}) but ${name} is not installed. Install the OpenTelemetry packages ` +
        `beside payhooks: npm install ${needed.join(' ')} (or turn tracing off: unset OTEL_TRACES_EXPORTER, or set it to none).`,
      { cause: err },
    );
  }
}
