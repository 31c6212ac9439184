import type { Command } from 'commander';
import { createClient } from '../client/index.js';
import type { WebhookEventRecord } from '../events/rest-contract.js';
import type { EnvOf } from '../service/environment.js';
import { DEFAULT_SESSION_DIR } from '../service/simulator-session.js';
import { SilentFailure, UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { countOf, printable } from './format.js';
import { findSimulatorTarget } from './simulator-target.js';

/** Where `payhooks deliveries` reads the delivery history. */
export interface DeliveriesSource {
  url: string;
  apiKey: string;
  /** For the output: `the service at …` or `the simulator at … (from …)`. */
  label: string;
}

/** Options common to the `deliveries` subcommands. */
export interface DeliveriesOptions {
  simulator?: string | undefined;
}

/**
 * The service when `PAYHOOKS_API_KEY` and `PAYHOOKS_API_URL` are both set (and `--simulator` is not given), else the
 * simulator of `--simulator`, `PAYHOOKS_API_URL` or the session file. Both answer the spec's
 * `GET /v1/webhook-events` and `POST /v1/webhook-events/{id}/retry`.
 */
export async function deliveriesSource(
  options: DeliveriesOptions,
  env: EnvOf<'deliveries'>,
  sessionDir: string = DEFAULT_SESSION_DIR,
): Promise<DeliveriesSource> {
  if (options.simulator === undefined && env.PAYHOOKS_API_KEY && env.PAYHOOKS_API_URL) {
    return { url: env.PAYHOOKS_API_URL, apiKey: env.PAYHOOKS_API_KEY, label: `the service at ${env.PAYHOOKS_API_URL}` };
  }
  const target = await findSimulatorTarget(options.simulator, env, sessionDir, 'read deliveries from');
  return { url: target.url, apiKey: target.apiKey, label: `the simulator at ${target.url} (from ${target.source})` };
}

function clientOf(source: DeliveriesSource) {
  return createClient({ apiKey: source.apiKey, environment: source.url });
}

/** The last attempt's outcome in a few words. */
function lastOutcome(record: WebhookEventRecord): string {
  const last = record.attempts.at(-1);
  if (!last) return 'not tried yet';
  return last.responseStatus != null ? `HTTP ${last.responseStatus}` : printable(last.error ?? 'no answer');
}

/** One line per record: id, type, eventId, status, attempts, last outcome, next attempt. */
export function deliveryLines(records: readonly WebhookEventRecord[]): string[] {
  if (records.length === 0) return ['no deliveries'];
  const rows = records.map((record) => [
    record.id,
    record.eventType,
    record.eventId,
    record.status,
    String(record.attempts.length),
    lastOutcome(record),
    record.nextAttemptAt ?? '',
  ]);
  const header = ['ID', 'TYPE', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST', 'NEXT ATTEMPT'];
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  return [header, ...rows].map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
}

/** A record with each attempt on its own line. */
export function deliveryDetail(record: WebhookEventRecord): string[] {
  // The simulator's records carry the endpoint's URL too (an extra field the looser schema keeps).
  const url = (record as Record<string, unknown>).url;
  return [
    `${record.id}: ${record.eventType} ${record.eventId} to endpoint ${record.endpointId}${typeof url === 'string' ? ` (${url})` : ''}`,
    `status ${record.status}, created ${record.createdAt}${record.nextAttemptAt ? `, next attempt ${record.nextAttemptAt}` : ''}`,
    ...record.attempts.map(
      (attempt) =>
        `  #${attempt.attemptNumber}  ${attempt.attemptedAt}  ${attempt.responseStatus != null ? `HTTP ${attempt.responseStatus}` : 'no answer'}${attempt.durationMs != null ? `  ${attempt.durationMs} ms` : ''}${attempt.error ? `  ${printable(attempt.error)}` : ''}`,
    ),
  ];
}

/** The record with this id, or the records of this eventId. */
async function findRecords(source: DeliveriesSource, id: string): Promise<WebhookEventRecord[]> {
  const client = clientOf(source);
  const byEvent: WebhookEventRecord[] = [];
  for await (const record of client.webhookEvents.iterate({ eventId: id })) byEvent.push(record);
  if (byEvent.length > 0) return byEvent;
  for await (const record of client.webhookEvents.iterate()) if (record.id === id) return [record];
  throw new UsageError(
    `No delivery ${JSON.stringify(id)} in ${source.label}: give a delivery id (payhooks deliveries list) or an eventId.`,
  );
}

/** `payhooks deliveries list|show|resend`: the delivery history of the simulator or the service. */
export function addDeliveriesCommands(program: Command, ctx: CommandContext): void {
  const source = async (opts: DeliveriesOptions) => deliveriesSource(opts, ctx.env('deliveries'));
  const deliveries = program
    .command('deliveries')
    .description(
      'the webhook delivery history (GET /v1/webhook-events) of the simulator, or of the service when PAYHOOKS_API_KEY and PAYHOOKS_API_URL are set; resend a past delivery',
    );
  deliveries
    .command('list')
    .description('the deliveries, oldest first: one per event and endpoint, with the attempts made')
    .option('--simulator <url>', 'the simulator to read (default: PAYHOOKS_API_URL, then ./.payhooks/simulator.json)')
    .option('--status <status>', 'pending, delivered or failed')
    .option('--event <eventId>', "only this event's deliveries")
    .option('--endpoint <endpointId>', "only this endpoint's deliveries")
    .option('--json', 'print one JSON array of the records')
    .action(async (opts: DeliveriesOptions & { status?: string; event?: string; endpoint?: string; json?: boolean }) => {
      const from = await source(opts);
      const records: WebhookEventRecord[] = [];
      const query = { status: opts.status, eventId: opts.event, endpointId: opts.endpoint };
      for await (const record of clientOf(from).webhookEvents.iterate(query)) records.push(record);
      if (opts.json) return ctx.out(JSON.stringify(records));
      await ctx.out([...deliveryLines(records), `${countOf(records.length, 'delivery')} in ${from.label}`].join('\n'));
    });
  deliveries
    .command('show')
    .description('one delivery (by its id) or the deliveries of one event (by eventId), each attempt on a line')
    .argument('<id>', 'a delivery id (payhooks deliveries list) or an eventId')
    .option('--simulator <url>', 'the simulator to read (default: PAYHOOKS_API_URL, then ./.payhooks/simulator.json)')
    .option('--json', 'print one JSON array of the records')
    .action(async (id: string, opts: DeliveriesOptions & { json?: boolean }) => {
      const records = await findRecords(await source(opts), id);
      await ctx.out(opts.json ? JSON.stringify(records) : records.flatMap(deliveryDetail).join('\n'));
    });
  deliveries
    .command('resend')
    .description(
      'send a past delivery again now, with its original eventId and body (POST /v1/webhook-events/{id}/retry); exit 0 when the receiver answers 2xx',
    )
    .argument('<id>', 'a delivery id, or an eventId (each of its deliveries is sent again)')
    .option('--simulator <url>', 'the simulator to use (default: PAYHOOKS_API_URL, then ./.payhooks/simulator.json)')
    .action(async (id: string, opts: DeliveriesOptions) => {
      const from = await source(opts);
      const records = await findRecords(from, id);
      let ok = true;
      const lines: string[] = [];
      for (const record of records) {
        const after = await clientOf(from).webhookEvents.retry(record.id);
        const last = after.attempts.at(-1);
        const status = last?.responseStatus;
        ok &&= status != null && status >= 200 && status < 300;
        lines.push(
          `resent ${after.id}: ${after.eventType} ${after.eventId} (the same eventId) → ${last ? lastOutcome(after) : 'no attempt recorded'}; status ${after.status}, ${countOf(after.attempts.length, 'attempt')}`,
        );
      }
      await ctx.out(lines.join('\n'));
      if (!ok) throw new SilentFailure();
    });
}
