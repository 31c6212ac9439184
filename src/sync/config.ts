import { existsSync, readFileSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { PayhooksError } from '../errors.js';
import { EVENT_TYPES, type EventType, isEventType } from '../events/event-types.js';
import { isSchemaName } from '../store/database.js';
import { MIRROR_DEFAULTS } from './mirror/mirror-sink.js';

/** The file names `serve`, `backfill` and `reconcile` look for in the working directory, in this order. */
export const CONFIG_FILE_NAMES = ['payhooks.config.js', 'payhooks.config.mjs', 'payhooks.config.json'] as const;

const DURATION = /^(\d+\s*[dhms]\s*)+$/;

const eventTypes = z
  .array(
    z.string().refine(isEventType, {
      error: (issue) => `${JSON.stringify(issue.input)} is not an event type (expected one of ${EVENT_TYPES.join(', ')})`,
    }),
  )
  .min(1, 'list at least one event type, or leave the key out for all of them');

const mirrorSchema = z.strictObject({
  /** Default true. */
  enabled: z.boolean().optional(),
  schema: z
    .string()
    .refine(isSchemaName, 'expected a schema name of lower-case letters, digits and underscores, starting with a letter or underscore')
    .optional(),
  eventTypes: eventTypes.optional(),
});

const durationText = (example: string) => z.string().regex(DURATION, `expected a duration such as ${example} (a number with d, h, m or s)`);

const reconcileSchema = z.strictObject({
  /** How often serve runs reconciliation; unset: never (run `payhooks reconcile` yourself). */
  every: durationText('1h').optional(),
  /** How far back each run looks. Default 5d: longer than the sender's retry horizon of 4 d 6½ h. */
  lookback: durationText('5d').optional(),
  /** The webhook endpoint whose deliveries count, when the organization has several. */
  endpointId: z.string().min(1).optional(),
});

/** The sync configuration file's shape (docs/configuration.md#the-sync-configuration-file). */
export const syncConfigSchema = z.strictObject({
  /** The Postgres mirror: `true`/`false`, or its options. Unset: on when serve has no --handlers. */
  mirror: z.union([z.boolean(), mirrorSchema]).optional(),
  reconcile: reconcileSchema.optional(),
});
export type SyncConfigFile = z.infer<typeof syncConfigSchema>;

/** The configuration as the service uses it: defaults applied. */
export interface SyncConfig {
  /** Where it came from: a path, or null when there is no file. */
  path: string | null;
  /** The mirror's settings; `enabled` undefined when the file does not say (the caller decides the default). */
  mirror: { enabled: boolean | undefined; schema: string; eventTypes: EventType[] | undefined };
  reconcile: { every: string | undefined; lookback: string; endpointId: string | undefined };
}

/** A configuration file that cannot be read or is not valid; the message names the file and each bad key. */
export class ConfigError extends PayhooksError {}

function formatIssues(path: string, error: z.ZodError): string {
  const lines = error.issues.map((issue) => {
    const key = issue.path.length ? issue.path.join('.') : '(the whole file)';
    return `  - ${key}: ${issue.message}`;
  });
  return `The configuration file ${path} is not valid:\n${lines.join('\n')}`;
}

async function readConfigFile(path: string): Promise<unknown> {
  if (extname(path) === '.json') {
    try {
      return JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new ConfigError(`The configuration file ${path} could not be read as JSON: ${PayhooksError.describe(err)}`, { cause: err });
    }
  }
  try {
    const module = (await import(pathToFileURL(path).href)) as { default?: unknown };
    return module.default;
  } catch (err) {
    throw new ConfigError(`The configuration file ${path} could not be loaded: ${PayhooksError.describe(err)}`, { cause: err });
  }
}

/**
 * Finds and checks the sync configuration: the file `explicitPath` names (PAYHOOKS_CONFIG), or else the first
 * of payhooks.config.js, .mjs, .json in `cwd`; none is fine (every default applies). A bad file throws a
 * {@link ConfigError} that lists every bad key and what was expected.
 *
 * @example
 * const config = await loadSyncConfig({ explicitPath: process.env.PAYHOOKS_CONFIG });
 * if (config.mirror.enabled ?? true) await registerMirror(hooks, { schema: config.mirror.schema });
 */
export async function loadSyncConfig(
  options: { explicitPath?: string | undefined; cwd?: string; mirrorSchema?: string | undefined } = {},
): Promise<SyncConfig> {
  const cwd = options.cwd ?? process.cwd();
  let path: string | null = null;
  if (options.explicitPath) {
    path = resolve(cwd, options.explicitPath);
    if (!existsSync(path)) throw new ConfigError(`The configuration file ${path} (PAYHOOKS_CONFIG) does not exist.`);
    if (!['.js', '.mjs', '.json'].includes(extname(path))) {
      throw new ConfigError(`The configuration file ${path} must end in .js, .mjs or .json.`);
    }
  } else {
    path = CONFIG_FILE_NAMES.map((name) => resolve(cwd, name)).find((candidate) => existsSync(candidate)) ?? null;
  }
  let file: SyncConfigFile = {};
  if (path) {
    const parsed = syncConfigSchema.safeParse(await readConfigFile(path));
    if (!parsed.success) throw new ConfigError(formatIssues(path, parsed.error));
    file = parsed.data;
  }
  const mirror = typeof file.mirror === 'object' ? file.mirror : { enabled: file.mirror };
  return {
    path,
    mirror: {
      enabled: mirror.enabled ?? (typeof file.mirror === 'object' ? true : undefined),
      schema: options.mirrorSchema ?? mirror.schema ?? MIRROR_DEFAULTS.schema,
      eventTypes: mirror.eventTypes,
    },
    reconcile: {
      every: file.reconcile?.every,
      lookback: file.reconcile?.lookback ?? '5d',
      endpointId: file.reconcile?.endpointId,
    },
  };
}
