// `payhooks serve --handlers bench/effect-handlers.mjs`: one handler that runs BENCH_EFFECT_STEPS effect steps per
// event (ctx.effect), each doing nothing outside: a drain then measures what the steps' records cost.
const steps = Number(process.env.BENCH_EFFECT_STEPS ?? 0);
if (!Number.isInteger(steps) || steps < 0)
  throw new Error(`BENCH_EFFECT_STEPS must be a whole number, not ${process.env.BENCH_EFFECT_STEPS}`);

export default (hooks) => {
  hooks.onAny(async (_event, ctx) => {
    for (let step = 1; step <= steps; step++) await ctx.effect(`step-${step}`, () => step);
  });
};
