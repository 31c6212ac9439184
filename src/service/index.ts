// The `payhooks/service` entry: the standalone service (what `payhooks serve` runs) as a library, so that an app can
// run it in its own process: resolve one configuration, start it, close it. Each export by name;
// test/public-surface.snapshot.json lists the run-time ones.

export {
  type ServiceConfig,
  type ServiceConfigInput,
  type ServiceRole,
  SERVICE_ROLES,
  TRACING_EXPORTERS,
  type TracingExporter,
  defineServiceConfig,
  serviceConfigSchema,
} from './service-config.js';
export { SERVICE_DEFAULTS } from './service-defaults.js';
export {
  checkServiceConfig,
  resolveServiceConfig,
  type ServiceConfigCheck,
  ServiceConfigError,
  type ServiceConfigProblem,
  type ServiceConfigSources,
  tracingExporters,
} from './resolve-service-config.js';
export { receiveServiceConfig } from './config-transfer.js';
export { type RunningServiceProcesses, type RunServiceOptions, runService, splitsWorker } from './run-service.js';
export { mirrorRuns, type RunningService, startService, type StartServiceOptions } from './start-service.js';
export { WEBHOOK_PATH } from './routes/webhook-route.js';
export { type RunningTracing, startTracing, TRACING_PACKAGES, TracingSetupError } from './start-tracing.js';
