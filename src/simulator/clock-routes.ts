import { z } from 'zod';
import { parseDuration } from '../internal/duration.js';
import type { SimulatorContext } from './context.js';
import { badRequest, conflict } from './route-error.js';
import { defineRoute, type Route } from './route.js';

/** `GET /v1/sandbox/clock`: the simulator's time and what is waiting on it. */
export const sandboxClockSchema = z.object({
  mode: z.enum(['real', 'manual']),
  now: z.string(),
  /** When each pending timer (a delivery retry, a subscription collection) is due, earliest first. */
  pending: z.array(z.string()),
});
export type SandboxClock = z.infer<typeof sandboxClockSchema>;

/** `POST /v1/sandbox/clock/advance`: `by` a duration (`1d`, `2h30m`) or `to` a time; exactly one. */
export const sandboxAdvanceInputSchema = z
  .object({ by: z.string().min(1).optional(), to: z.iso.datetime({ offset: true }).optional() })
  .refine((input) => (input.by === undefined) !== (input.to === undefined), 'give either by (a duration such as 1d) or to (a time)');
export type SandboxAdvanceInput = z.input<typeof sandboxAdvanceInputSchema>;

/** What an advance did: the time before and after, and how many timers ran on the way. */
export const sandboxAdvanceSchema = z.object({ from: z.string(), to: z.string(), fired: z.number().int() });
export type SandboxAdvance = z.infer<typeof sandboxAdvanceSchema>;

/**
 * Simulator only: read the clock, and move a manual one forward. The advance answers once every timer due on
 * the way has run and the deliveries it started have ended, so the delivery history is complete when it returns.
 */
export function clockRoutes(ctx: SimulatorContext): Route[] {
  const view = (): SandboxClock => ({
    mode: ctx.clock.mode,
    now: ctx.clock.iso(),
    pending: ctx.clock.due().map((at) => new Date(at).toISOString()),
  });
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/sandbox/clock',
      operationId: 'getSandboxClock',
      summary:
        "Simulator only (assumed, not in the spec): the simulator's time (real or manual) and when each pending retry or collection is due.",
      tag: 'Sandbox',
      stagingOnly: true,
      response: sandboxClockSchema,
      errors: [403],
      handle: () => ({ status: 200, body: view() }),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/clock/advance',
      operationId: 'advanceSandboxClock',
      summary:
        'Simulator only (assumed, not in the spec): move a manual clock forward by a duration (1d, 2h30m) or to a time; the retries and subscription collections due on the way run in order, each at its own time. 409 on the real clock.',
      tag: 'Sandbox',
      stagingOnly: true,
      input: sandboxAdvanceInputSchema,
      response: sandboxAdvanceSchema,
      errors: [400, 403, 409],
      async handle({ input }) {
        if (ctx.clock.mode !== 'manual') {
          throw conflict('The simulator runs on the real clock; start it with payhooks simulate --clock manual to advance it.');
        }
        let target: number;
        try {
          target = input.by !== undefined ? ctx.clock.now() + parseDuration(input.by) : new Date(input.to!).getTime();
        } catch (err) {
          throw badRequest((err as Error).message);
        }
        const advance = await ctx.clock.advanceTo(target).catch((err: unknown) => {
          throw err instanceof RangeError ? badRequest(err.message) : err;
        });
        return {
          status: 200,
          body: { from: new Date(advance.from).toISOString(), to: new Date(advance.to).toISOString(), fired: advance.fired },
        };
      },
    }),
  ];
}
