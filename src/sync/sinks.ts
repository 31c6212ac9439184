import type { Logger } from 'pino';
import type { ApiClient } from '../client/api-client.js';
import type { Payhooks } from '../payhooks.js';
import { type BrokerPublisher, registerBrokerSink } from './brokers/broker-sink.js';
import { natsPublisher } from './brokers/nats.js';
import { rabbitMqPublisher } from './brokers/rabbitmq.js';
import type { BrokerConfig, SyncConfig } from './config.js';
import { registerConnector } from './connector.js';
import { describeUrl } from '../internal/describe-url.js';
import { registerHttpForward } from './http-forward.js';

/** The sinks registered from a configuration; close them after `hooks.stop()`. */
export interface RegisteredSinks {
  /** Handler names, as completion is recorded: `connector:crm`, `forward:erp`, `broker:rabbitmq`. */
  names: string[];
  /** One line per sink for the start-up log (no credentials). */
  descriptions: string[];
  close(): Promise<void>;
}

function publisherFor(broker: BrokerConfig, logger: Logger): BrokerPublisher {
  if (broker.kind === 'rabbitmq') return rabbitMqPublisher({ ...broker, logger });
  return natsPublisher({ ...broker, logger });
}

/**
 * Registers the configuration's connectors, HTTP forward targets and brokers, in that order, each as its own
 * handler: one failing never holds back another, nor the mirror (docs/sinks.md).
 *
 * @example
 * const sinks = await registerSinks(hooks, config, { mirrorSchema: 'payhooks_mirror', logger });
 */
export async function registerSinks(
  hooks: Payhooks<ApiClient>,
  config: Pick<SyncConfig, 'forward' | 'brokers' | 'connectors'>,
  options: { mirrorSchema?: string | undefined; logger: Logger },
): Promise<RegisteredSinks> {
  const names: string[] = [];
  const descriptions: string[] = [];
  const publishers: BrokerPublisher[] = [];
  for (const connector of config.connectors) {
    await registerConnector(hooks, connector, { mirrorSchema: options.mirrorSchema });
    names.push(`connector:${connector.name}`);
    descriptions.push(`connector ${connector.name}`);
  }
  for (const target of config.forward) {
    await registerHttpForward(hooks, target, { mirrorSchema: options.mirrorSchema });
    names.push(`forward:${target.name}`);
    descriptions.push(`HTTP forward ${target.name} to ${describeUrl(target.url)}`);
  }
  for (const broker of config.brokers) {
    const publisher = publisherFor(broker, options.logger.child({ sink: `broker:${broker.name}` }));
    publishers.push(publisher);
    await registerBrokerSink(hooks, { name: broker.name, publisher, eventTypes: broker.eventTypes, mirrorSchema: options.mirrorSchema });
    names.push(`broker:${broker.name}`);
    descriptions.push(`${broker.kind === 'rabbitmq' ? 'RabbitMQ' : 'NATS JetStream'} ${publisher.describe}`);
  }
  return {
    names,
    descriptions,
    async close() {
      await Promise.all(publishers.map((p) => p.close()));
    },
  };
}
