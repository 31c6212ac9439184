import type { Logger } from 'pino';
import type { ApiClient } from '../client/api-client.js';
import type { Payhooks } from '../payhooks.js';
import type { SyncConfig } from './config.js';
import type { Connector } from './connector.js';
import { registerSink, type Sink } from './sink.js';
import { type SinkAccounts, sinkKind, type SinkEntry } from './sink-registry.js';

/** The sinks registered from a configuration; close them after `hooks.stop()`. */
export interface RegisteredSinks {
  /** Handler names, as completion is recorded: `connector:crm`, `forward:erp`, `broker:rabbitmq`, `notify:mirror`. */
  names: string[];
  /** One line per sink for the start-up log (no credentials). */
  descriptions: string[];
  close(): Promise<void>;
}

/**
 * Registers the configuration's connectors, HTTP forward targets, brokers and `sinks` entries, in that order, each
 * as its own handler: one failing never holds back another, nor the mirror (docs/sinks.md). Each is made by its
 * kind in the registry (sink-registry.ts); the mirror is registered before, by `registerMirror`.
 *
 * @example
 * const sinks = await registerSinks(hooks, config, { mirrorSchema: 'payhooks_mirror', logger });
 */
export async function registerSinks(
  hooks: Payhooks<ApiClient>,
  config: Pick<SyncConfig, 'forward' | 'brokers' | 'connectors'> & Partial<Pick<SyncConfig, 'sinks'>>,
  options: { mirrorSchema?: string | undefined; logger: Logger },
): Promise<RegisteredSinks> {
  const store = await hooks.ready();
  const entries: SinkEntry[] = [
    ...config.connectors.map((connector) => ({ kind: sinkKind('connector'), options: connector as Connector & SinkAccounts })),
    ...config.forward.map((target) => ({ kind: sinkKind('http-forward'), options: target })),
    ...config.brokers.map((broker) => ({ kind: sinkKind(broker.kind), options: broker })),
    ...(config.sinks ?? []),
  ];
  const sinks: Sink[] = [];
  try {
    for (const { kind, options: settings } of entries) {
      const logger = options.logger.child({ sink: `${kind.prefix}:${settings.name}` });
      const sink = await kind.create(settings, { store, mirrorSchema: options.mirrorSchema, logger });
      sinks.push(sink);
      // An entry's `accounts` limit its handler to those accounts' events (docs/sinks.md#sinks-per-account).
      registerSink(hooks, sink, { store, mirrorSchema: options.mirrorSchema, accounts: settings.accounts });
    }
  } catch (err) {
    await Promise.all(sinks.map((s) => s.close().catch(() => undefined)));
    throw err;
  }
  return {
    names: sinks.map((s) => s.name),
    descriptions: sinks.map((s) => s.describe),
    async close() {
      await Promise.all(sinks.map((s) => s.close()));
    },
  };
}
