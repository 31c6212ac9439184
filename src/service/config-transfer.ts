import { z } from 'zod';
import { PayhooksError } from '../errors.js';
import { loadSyncConfig } from '../sync/config.js';
import { type ServiceConfig, serviceConfigSchema } from './service-config.js';

/**
 * The variable through which serve hands its worker child the resolved configuration. An environment variable,
 * not an argument: `ps` shows every user a process's arguments, and the configuration holds secrets.
 */
export const SERVICE_CONFIG_VARIABLE = 'PAYHOOKS_RESOLVED_SERVICE_CONFIG';

const transferred = z.object({ config: z.unknown(), connectors: z.array(z.string()), listed: z.array(z.string()).default([]) });

/** How a `sinks` entry is named across the process boundary: its handler name. */
const listedName = (entry: ServiceConfig['sinks']['sinks'][number]) => `${entry.kind.prefix}:${entry.options.name}`;

/**
 * The configuration as text for a child process. Connectors are code (made by defineConnector in a .js file), and an
 * entry of the `sinks` list holds its kind (code, from the registry): neither crosses a process boundary, so only
 * their names go, and the child takes them from the same file.
 */
export function serializeServiceConfig(config: ServiceConfig): string {
  const { connectors, sinks: listed, ...sinks } = config.sinks;
  return JSON.stringify({
    config: { ...config, sinks: { ...sinks, connectors: [], sinks: [] } },
    connectors: connectors.map((c) => c.name),
    listed: listed.map(listedName),
  });
}

/**
 * The configuration a parent process resolved ({@link serializeServiceConfig}); the child runs with it instead of
 * reading the environment and the file again, so both run with the same settings, secret and API included.
 */
export async function deserializeServiceConfig(text: string): Promise<ServiceConfig> {
  const parsed = transferred.safeParse(JSON.parse(text));
  if (!parsed.success) throw new PayhooksError(`${SERVICE_CONFIG_VARIABLE} does not hold a service configuration.`);
  const config = serviceConfigSchema.parse(parsed.data.config);
  const { connectors: connectorNames, listed: listedNames } = parsed.data;
  if (connectorNames.length === 0 && listedNames.length === 0) return config;
  // The file was checked by the parent; a change to it since then shows as a missing sink, named.
  const file = await loadSyncConfig({ explicitPath: config.configFile ?? undefined, mirrorSchema: config.mirror.schema });
  const missing = (what: string) => new PayhooksError(`The ${what} is no longer in ${config.configFile}; restart serve.`);
  const connectors = connectorNames.map((name) => {
    const found = file.connectors.find((c) => c.name === name);
    if (!found) throw missing(`connector ${name}`);
    return found;
  });
  const listed = listedNames.map((name) => {
    const found = file.sinks.find((entry) => listedName(entry) === name);
    if (!found) throw missing(`sink ${name}`);
    return found;
  });
  return { ...config, sinks: { ...config.sinks, connectors, sinks: listed } };
}

/**
 * The configuration a parent serve handed this worker child, or undefined when there is none (this process was not
 * started as a worker child). The variable is removed from the environment once read: the worker's own children,
 * and handlers reading `process.env`, do not see the secrets it holds.
 *
 * @example
 * const config = (await receiveServiceConfig()) ?? (await resolveServiceConfig({ env: process.env }));
 */
export async function receiveServiceConfig(env: NodeJS.ProcessEnv = process.env): Promise<ServiceConfig | undefined> {
  const handed = env[SERVICE_CONFIG_VARIABLE];
  delete env[SERVICE_CONFIG_VARIABLE];
  return handed === undefined ? undefined : deserializeServiceConfig(handed);
}
