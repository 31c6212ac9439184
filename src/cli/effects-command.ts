import type { Command } from 'commander';
import type { EffectStep } from '../store/effect-steps.js';
import { SilentFailure, UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { printable, printableJson, table } from './format.js';
import { withInbox } from './with-inbox.js';

/**
 * Adds `payhooks effects list EVENT` and `payhooks effects resolve EVENT STEP --done|--redo [--handler H]`: the
 * `ctx.effect` steps of an event, and an operator's answer to a step held for review (docs/effects.md).
 */
export function addEffectsCommands(program: Command, ctx: CommandContext): void {
  const effects = program.command('effects').description("an event's effect steps (ctx.effect): list them, resolve one held for review");
  effects
    .command('list')
    .description('list the effect steps of an event, in the order they started')
    .argument('<eventId>')
    .option('--json', 'print one JSON array')
    .action(async (eventId: string, opts: { json?: boolean }) => {
      const event = await withInbox(ctx.env('events'), (inbox) => inbox.getEvent(eventId));
      if (!event) throw new UsageError(`No stored event with eventId ${eventId}.`);
      if (opts.json) return ctx.out(printableJson(JSON.stringify(event.effectSteps, null, 2)));
      if (event.effectSteps.length === 0) return ctx.out(`event ${printable(eventId)} has no effect steps`);
      await ctx.out(stepsTable(event.effectSteps));
    });
  effects
    .command('resolve')
    .description('answer a step held for review: --done (it happened; not called again) or --redo (call it again, same key)')
    .argument('<eventId>')
    .argument('<step>', 'the step name, as effects list shows it')
    .option('--done', 'the effect happened: record the step completed (no result) and go on')
    .option('--redo', 'the effect did not happen: call the step again on the next run')
    .option('--handler <name>', 'the handler, when several handlers of the event have a step of this name')
    .action(async (eventId: string, step: string, opts: { done?: boolean; redo?: boolean; handler?: string }) => {
      if (opts.done === opts.redo)
        throw new UsageError('Say what happened: --done (the effect happened) or --redo (call it again), one of them.');
      const resolution = opts.done ? 'done' : 'redo';
      const outcome = await withInbox(ctx.env('events'), (inbox) =>
        inbox.resolveStep({ eventId, step, handler: opts.handler }, resolution),
      );
      const named = `step ${printable(JSON.stringify(step))} of event ${printable(eventId)}`;
      if (outcome.resolved) {
        const next = outcome.requeued
          ? 'the event is queued again'
          : outcome.remaining > 0
            ? `${outcome.remaining} more of its steps still need review`
            : 'the event was not waiting for review (replay it to run it)';
        return ctx.out(`resolved ${named} (handler ${printable(outcome.handler)}) as ${resolution}: ${next}`);
      }
      if (outcome.reason === 'ambiguous')
        throw new UsageError(
          `Several handlers of event ${eventId} have a step ${JSON.stringify(step)}: name one with --handler (${outcome.handlers?.join(', ')}).`,
        );
      await ctx.err(
        outcome.reason === 'not-found'
          ? `no ${named}${opts.handler ? ` for handler ${printable(opts.handler)}` : ''} (payhooks effects list ${printable(eventId)} shows its steps)`
          : `${named} is ${outcome.state}, not waiting for review: nothing changed`,
      );
      throw new SilentFailure();
    });
}

function stepsTable(steps: readonly EffectStep[]): string {
  return table(
    ['HANDLER', 'STEP', 'STATE', 'IDEMPOTENT', 'CALLS', 'ATTEMPT', 'STARTED', 'NOTE'],
    steps.map((s) => [
      printable(s.handler),
      printable(s.step),
      s.state,
      s.idempotent ? 'yes' : 'no',
      String(s.calls),
      String(s.attempt),
      s.startedAt.toISOString(),
      printable(s.resolution ? `resolved ${s.resolution}` : (s.error ?? '').slice(0, 80)),
    ]),
    [4, 5],
  );
}
