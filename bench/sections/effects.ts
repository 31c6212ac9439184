// Effects: what ctx.effect costs a drain. The same backlog drained by one worker process whose handler runs 0, 1 or 3
// effect steps per event (steps that call nothing outside: what is measured is their records), in the same run,
// reported as ratios to 0 steps.
import { dropSchemas } from '../lib/database.js';
import type { Section } from '../lib/report.js';
import { median, rounds, scaled, times, whole } from '../lib/stats.js';
import { drainWithWorkers, payhooksSchema } from './drain.js';

const BACKLOG = scaled(20_000);
const STEPS = [0, 1, 3];

export async function benchEffects(): Promise<Section> {
  const rates = new Map<number, number[]>(STEPS.map((steps) => [steps, []]));
  const schemas: string[] = [];
  try {
    for (let round = 0; round < rounds(); round++) {
      // Alternating within each round, each drain on a fresh schema, so that no variant inherits another's rows.
      for (const steps of STEPS) {
        const schema = await payhooksSchema(0);
        schemas.push(schema);
        const { rate } = await drainWithWorkers(schema, `e${steps}r${round}`, BACKLOG, 1, {
          handlers: { module: 'bench/effect-handlers.mjs', env: { BENCH_EFFECT_STEPS: String(steps) } },
        });
        rates.get(steps)!.push(rate);
        console.info(`  effects round ${round + 1}, ${steps} step(s) per event: ${whole(rate)} events/s`);
        await dropSchemas([schema]);
      }
    }
  } finally {
    await dropSchemas(schemas);
  }
  const base = median(rates.get(0)!);
  const rows = STEPS.map((steps) => {
    const rate = median(rates.get(steps)!);
    return [String(steps), String(steps * 2), whole(rate), times(rate / base)];
  });
  return {
    title: 'Effects',
    about:
      `A backlog of ${whole(BACKLOG)} events stored as the receiver stores it, drained by one \`payhooks serve --role worker --handlers bench/effect-handlers.mjs\` ` +
      '(one `onAny` handler, default concurrency 4) whose handler runs 0, 1 or 3 `ctx.effect` steps per event, each calling nothing outside, so ' +
      "that the figures are what the steps' records cost: one statement before a step's function runs and one after. " +
      `The worker is warmed up as in Drain; events/s from the first outcome of the backlog to the last, medians of ${rounds()} runs, ` +
      'the three alternating within each round, each on a fresh schema. A handler that calls no step pays nothing (test/worker/effects-hot-path.test.ts).',
    header: ['steps per event', 'step statements per event', 'events/s', 'ratio to 0 steps'],
    rows,
    targets: [],
    notes: [
      "Each step waits for one commit on its handler's path: its intent must be durable before its function runs (the result after it is recorded without waiting for the disk: lost only in a crash of the server itself, it leaves the step unknown, the designed fallback). So the drain with steps is bounded by the latency of those commits times the handlers running at once, not by the work the database does: more concurrency, or a disk that flushes faster, raises it; a handler's outside call, which a step stands for, usually costs more than the step.",
    ],
  };
}
