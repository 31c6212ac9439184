import type { Command } from 'commander';
import type { ResourceStory, StoryEvent } from '../store/resource-story.js';
import { DEFAULT_STORY_EVENTS, resourceKeysOf } from '../store/resource-story.js';
import { UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { countOf, printable, printableJson } from './format.js';
import { accountOption, positiveInt } from './parse-options.js';
import { withInbox } from './with-inbox.js';

/** The options of `payhooks events history`. */
interface HistoryOptions {
  account?: string | undefined;
  json?: boolean | undefined;
  limit: number;
  mirrorSchema: string;
}

/**
 * Adds `payhooks events history <resource> [--json] [--limit N] [--mirror-schema S]`: every event about a resource in
 * order of arrival, each handler's runs and effect steps, and the resource's mirror row now (docs/cli.md#events-history).
 */
export function addHistoryCommand(events: Command, ctx: CommandContext): void {
  events
    .command('history')
    .description('the story of one resource: its events in order, every handler run and effect step, and its mirror row now')
    .argument('<resource>', 'invoice:inv_…, customer:cus_…, payment:…, dispute:…, subscription:…, or a bare id (every kind)')
    .option('--json', 'print one JSON object: resource, keys, events (oldest first), truncated, mirror')
    .option('--limit <n>', 'at most this many events, the newest', positiveInt('--limit'), DEFAULT_STORY_EVENTS)
    .option('--account <id>', "only this account's events (docs/accounts.md); default every account's", accountOption)
    .option('--mirror-schema <schema>', "the mirror's schema, on a database this command opens (beside serve: serve's)", 'payhooks_mirror')
    .action(async (resource: string, opts: HistoryOptions) => {
      try {
        resourceKeysOf(resource);
      } catch (err) {
        throw new UsageError((err as RangeError).message);
      }
      const story = await withInbox(ctx.env('events'), (inbox) =>
        inbox.resourceStory(resource, { limit: opts.limit, mirrorSchema: opts.mirrorSchema, account: opts.account }),
      );
      if (opts.json) return ctx.out(printableJson(JSON.stringify(story, null, 2)));
      await ctx.out(storyText(story));
    });
}

/** The story as lines for a person: one block per event, then the mirror's rows. */
export function storyText(story: ResourceStory): string {
  const lines = [
    `${printable(story.resource)}: ${countOf(story.events.length, 'event')}, oldest first${story.truncated ? ' (older ones left out: raise --limit)' : ''}`,
  ];
  for (const event of story.events) lines.push('', ...eventLines(event));
  lines.push('');
  if (story.mirror === null) lines.push('mirror: not in use here');
  else if (story.mirror.length === 0) lines.push('mirror: no row');
  for (const record of story.mirror ?? [])
    lines.push(`mirror ${record.table} ${printable(record.id)}:`, printableJson(JSON.stringify(record.row, null, 2)));
  return lines.join('\n');
}

function eventLines(event: StoryEvent): string[] {
  const lines = [
    `${event.receivedAt.toISOString()}  ${printable(event.eventId)}  ${printable(event.eventType)}  ${event.status}  ` +
      `attempts ${event.attempts}  deliveries ${event.deliveries}${event.resourceKey ? `  ${printable(event.resourceKey)}` : ''}`,
  ];
  for (const a of event.handlerAttempts) {
    const took = a.durationMs === null ? '' : ` in ${a.durationMs} ms`;
    const error = a.error ? `: ${printable(a.error.split('\n', 1)[0]!)}` : '';
    lines.push(`  run ${a.attempt ?? '-'} ${printable(a.handler)} ${a.outcome}${took}${error}`);
  }
  for (const step of event.effectSteps)
    lines.push(`  effect ${printable(step.handler)} ${printable(JSON.stringify(step.step))} ${step.state}, ${countOf(step.calls, 'call')}`);
  if (event.handlerAttempts.length === 0 && event.effectSteps.length === 0) lines.push('  no handler has run for it');
  return lines;
}
