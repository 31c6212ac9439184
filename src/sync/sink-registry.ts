import { z } from 'zod';
import { natsSink } from './brokers/nats.js';
import { rabbitMqSink } from './brokers/rabbitmq.js';
import { redisStreamsKind } from './brokers/redis-streams.js';
import { connectorKind, isConnector } from './connector.js';
import { httpForwardSink } from './http-forward.js';
import { changeNoticesKind } from './mirror/change-notices.js';
import { accountsField } from './config-fields.js';
import type { SinkKind } from './sink.js';

/** The kinds the `brokers` key takes (it predates `sinks`). */
const BROKER_KINDS = ['rabbitmq', 'nats', 'redis-streams'] as const;

/**
 * The built-in sink kinds, one line each: a new kind is one file that states its schema and `create`, plus its line
 * here (docs/sinks.md#writing-a-sink-kind). The mirror is configured by its own `mirror` key (docs/mirror.md).
 */
export const SINK_KINDS = [
  httpForwardSink, // http-forward.ts
  rabbitMqSink, // brokers/rabbitmq.ts
  natsSink, // brokers/nats.ts
  redisStreamsKind, // brokers/redis-streams.ts
  changeNoticesKind, // mirror/change-notices.ts
  connectorKind, // connector.ts
] as const;

/** The settings of each built-in kind, as its schema outputs them (defaults applied, secrets read). */
export type SinkOptions = z.output<(typeof SINK_KINDS)[number]['schema']>;

/** A broker of the configuration file (`rabbitmq`, `nats`, `redis-streams`), with its name and secrets resolved. */
export type BrokerConfig = Extract<SinkOptions, { kind: (typeof BROKER_KINDS)[number] }>;

/** The `kind`s a `sinks` entry may name. */
export const SINK_KIND_NAMES: readonly string[] = SINK_KINDS.map((k) => k.kind);

/** The `accounts` key any sink entry may carry: the accounts whose events it takes (undefined: every account). */
export interface SinkAccounts {
  accounts?: readonly string[] | undefined;
}

/** One checked entry of `sinks` or `brokers`: its kind and its settings, defaults applied, secrets read. */
export interface SinkEntry {
  kind: SinkKind<{ name: string }>;
  options: { name: string } & SinkAccounts;
}

/**
 * A kind's entry schema that also takes `accounts` (docs/sinks.md#sinks-per-account): the key is checked here, once for
 * every kind, and kept beside the kind's own settings, which its schema checks without it.
 *
 * @example
 * withAccounts(httpForwardSink.schema).parse({ name: 'erp', url, accounts: ['gym-north'] }).accounts // ['gym-north']
 */
export function withAccounts<Options extends object>(schema: z.ZodType<Options, unknown>) {
  return z.unknown().transform((entry, ctx): Options & SinkAccounts => {
    const { accounts, ...settings } =
      entry !== null && typeof entry === 'object' ? (entry as { accounts?: unknown }) : { accounts: undefined };
    const checked = {
      settings: schema.safeParse(entry !== null && typeof entry === 'object' ? settings : entry),
      accounts: accountsField.optional().safeParse(accounts),
    };
    for (const [key, result] of Object.entries(checked)) {
      if (result.success) continue;
      const prefix = key === 'accounts' ? ['accounts'] : [];
      for (const issue of result.error.issues)
        ctx.addIssue({ ...issue, code: 'custom', message: issue.message, path: [...prefix, ...issue.path] });
    }
    if (!checked.settings.success || !checked.accounts.success) return z.NEVER;
    return checked.accounts.data === undefined ? checked.settings.data : { ...checked.settings.data, accounts: checked.accounts.data };
  });
}

/**
 * The kind named `kind`, or an error that names the known ones.
 *
 * @example
 * sinkKind('redis-streams').kind // 'redis-streams'
 */
export function sinkKind(kind: string, known: readonly string[] = SINK_KIND_NAMES): SinkKind<{ name: string }> {
  const found = known.includes(kind) ? SINK_KINDS.find((k) => k.kind === kind) : undefined;
  if (!found) throw new Error(`unknown sink kind ${JSON.stringify(kind)}; the known kinds are ${known.join(', ')}`);
  return found as unknown as SinkKind<{ name: string }>;
}

/** The schema of a list of sink entries, each checked against its kind's schema (`kind` picks it). */
export function sinkListSchema(known: readonly string[]) {
  return z.array(
    z.unknown().transform((entry, ctx): SinkEntry => {
      // A connector made by defineConnector carries its own `kind` marker.
      if (isConnector(entry) && known.includes('connector')) return { kind: sinkKind('connector'), options: entry };
      if (entry === null || typeof entry !== 'object' || typeof (entry as { kind?: unknown }).kind !== 'string') {
        ctx.addIssue({ code: 'custom', path: ['kind'], message: `expected the sink's kind, one of ${known.join(', ')}` });
        return z.NEVER;
      }
      const { kind: name, ...settings } = entry as { kind: string };
      let kind: SinkKind<{ name: string }>;
      try {
        kind = sinkKind(name, known);
      } catch (err) {
        ctx.addIssue({ code: 'custom', path: ['kind'], message: (err as Error).message });
        return z.NEVER;
      }
      const parsed = withAccounts(kind.schema).safeParse(settings);
      if (!parsed.success) {
        for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, code: 'custom', message: issue.message, path: issue.path });
        return z.NEVER;
      }
      return { kind, options: parsed.data };
    }),
  );
}

/** The `sinks` key: entries of every kind but connectors, which need a `.js` file (they may be listed there too). */
export const sinksSchema = sinkListSchema(SINK_KIND_NAMES);
/** The `brokers` key: `rabbitmq`, `nats` and `redis-streams` entries. */
export const brokersSchema = sinkListSchema(BROKER_KINDS);

/** The distinct prefixes the kinds record completion under (several broker kinds share `broker`). */
const SINK_PREFIXES = [...new Set(SINK_KINDS.map((k) => k.prefix))];

/**
 * Where a handler's failures come from, for the issues (docs/admin.md#issues): a sink, when its name starts with the
 * prefix a kind declares (`forward:erp` → forward sink `erp`), or the app's own handler. Read from the registry, so
 * that a new kind needs no word here.
 *
 * @example
 * handlerSource('forward:erp') // { kind: 'sink', prefix: 'forward', name: 'erp' }
 * handlerSource('ledger') // { kind: 'handler', name: 'ledger' }
 */
export function handlerSource(handler: string): { kind: 'handler'; name: string } | { kind: 'sink'; prefix: string; name: string } {
  for (const prefix of SINK_PREFIXES)
    if (handler.startsWith(`${prefix}:`) && handler.length > prefix.length + 1)
      return { kind: 'sink', prefix, name: handler.slice(prefix.length + 1) };
  return { kind: 'handler', name: handler };
}
