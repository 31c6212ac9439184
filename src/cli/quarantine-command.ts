import { type Command, Option } from 'commander';
import type { QuarantinedDelivery, QuarantinedDetail } from '../store/quarantine.js';
import { UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { printable, printableJson, table } from './format.js';
import { positiveInt } from './parse-options.js';
import { withInbox } from './with-inbox.js';

const STATES = ['held', 'released', 'discarded', 'all'] as const;

/**
 * Adds `payhooks quarantine list|show|release|discard`: the signed deliveries that could not be stored as events
 * (docs/receiver.md#quarantine), and what an operator does with them.
 */
export function addQuarantineCommands(program: Command, ctx: CommandContext): void {
  const quarantine = program
    .command('quarantine')
    .description('signed deliveries that could not be stored as events: list, show, release or discard them');
  quarantine
    .command('list')
    .description('list quarantined deliveries, newest first (held ones unless --state says otherwise)')
    .addOption(new Option('--state <state>', 'which ones').choices(STATES).default('held'))
    .option('--limit <n>', 'at most this many', positiveInt('--limit'), 100)
    .option('--json', 'print one JSON array')
    .action(async (opts: { state: (typeof STATES)[number]; limit: number; json?: boolean }) => {
      const rows = await withInbox(ctx.env('events'), (inbox) => inbox.listQuarantined({ state: opts.state, limit: opts.limit }));
      if (opts.json) return ctx.out(printableJson(JSON.stringify(rows, null, 2)));
      if (rows.length === 0) return ctx.out(opts.state === 'held' ? 'nothing quarantined' : `no ${opts.state} deliveries`);
      await ctx.out(quarantineTable(rows));
    });
  quarantine
    .command('show')
    .description('show one quarantined delivery: its reason, headers and exact body')
    .argument('<id>', 'the number quarantine list shows')
    .action(async (id: string) => {
      const held = await withInbox(ctx.env('events'), (inbox) => inbox.getQuarantined(id));
      if (!held) throw new UsageError(`No quarantined delivery #${id}.`);
      await ctx.out(quarantinedJson(held));
    });
  quarantine
    .command('release')
    .description('check a held delivery again and store it as an event (queued; a duplicate if its eventId is known)')
    .argument('<id>')
    .option('--unordered', 'store it without its resource key (no per-resource order): for a resource id that cannot be stored')
    .action(async (id: string, opts: { unordered?: boolean }) => {
      const released = await withInbox(ctx.env('events'), (inbox) => inbox.releaseQuarantined(id, { unordered: opts.unordered }));
      const dropped = released.droppedHeaders.length ? ` (headers left out: ${released.droppedHeaders.join(', ')})` : '';
      await ctx.out(
        released.queued
          ? `released #${id} as event ${printable(released.eventId)}: queued${dropped}`
          : `released #${id}: event ${printable(released.eventId)} was already stored; not queued again${dropped}`,
      );
    });
  quarantine
    .command('discard')
    .description("drop a held delivery's bytes; its reason and count stay, and a repeat is answered as before")
    .argument('<id>')
    .action(async (id: string) => {
      await withInbox(ctx.env('events'), (inbox) => inbox.discardQuarantined(id));
      await ctx.out(`discarded #${id}`);
    });
}

/** What `quarantine show` prints (and `events show` for a quarantined delivery): its body as text and base64. */
export function quarantinedJson(held: QuarantinedDetail): string {
  const { rawBody, ...rest } = held;
  const text = new TextDecoder().decode(rawBody);
  return printableJson(JSON.stringify({ ...rest, rawBody: text, rawBodyBase64: Buffer.from(rawBody).toString('base64') }, null, 2));
}

/** Quarantined deliveries in the columns of `events list`, with the quarantine number and reason. */
export function quarantineTable(rows: readonly QuarantinedDelivery[]): string {
  return table(
    ['#', 'EVENT ID', 'TYPE', 'STATUS', 'KIND', 'DELIVERIES', 'RECEIVED', 'REASON'],
    rows.map((q) => [
      q.id,
      q.eventId ?? '-',
      q.eventType ?? '-',
      q.state === 'held' ? 'quarantined' : q.state,
      q.kind,
      String(q.deliveries),
      q.receivedAt.toISOString(),
      q.reason,
    ]),
  );
}
