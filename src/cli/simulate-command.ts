import type { Logger } from 'pino';
import { startSimulator, type ResolvedSimulatorOptions, type SimulatorOptions } from '../simulator/index.js';
import { untilSignal } from './until-signal.js';

/** The options `payhooks simulate` takes, already parsed and checked by the command line. */
export type SimulateCommandOptions = Pick<
  ResolvedSimulatorOptions,
  'port' | 'host' | 'timeScale' | 'duplicateRate' | 'reorder' | 'failRate'
>;

/** Commander parsers that fail with the flag's name in the message. */
export const simulateOptionParsers = {
  port(value: string): number {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n > 65535)
      throw new Error(`--port takes a whole number from 0 to 65535 (0: any free port), not ${JSON.stringify(value)}.`);
    return n;
  },
  timeScale(value: string): number {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
      throw new Error(
        `--time-scale takes a number greater than 0 (e.g. 60: a minute's delay takes a second), not ${JSON.stringify(value)}.`,
      );
    return n;
  },
  rate(flag: string) {
    return (value: string): number => {
      const n = Number(value);
      if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1)
        throw new Error(`${flag} takes a probability between 0 and 1, not ${JSON.stringify(value)}.`);
      return n;
    };
  },
};

function howTo(url: string, options: SimulateCommandOptions): string {
  const chaos = [
    options.timeScale !== 1 ? `time scale ${options.timeScale}` : '',
    options.duplicateRate > 0 ? `duplicate rate ${options.duplicateRate}` : '',
    options.reorder ? 'reordering' : '',
    options.failRate > 0 ? `REST fail rate ${options.failRate}` : '',
  ].filter(Boolean);
  return `Payment Collection Service simulator listening on ${url}
${chaos.length ? `Chaos: ${chaos.join(', ')}.\n` : ''}
  Any key starting with sk_test_ is a staging key (sk_live_ is production: the sandbox refuses it).
  Register a webhook endpoint, e.g. pointing at \`payhooks serve\`:

    curl -s ${url}/v1/webhooks -H 'authorization: Bearer sk_test_local' -H 'content-type: application/json' \\
      -d '{"input":{"url":"http://127.0.0.1:8787/webhooks","description":"local","enabledEvents":["INVOICE_PAID","PAYMENT_COMPLETED"]}}'

  Its signing secret: GET ${url}/v1/webhooks/{id}/secret (give it to the receiver as PAYHOOKS_WEBHOOK_SECRET).
  The interface: ${url}/openapi.json (or .yaml). Delivery history: GET ${url}/v1/webhook-events.
  Everything is in memory and lost on exit. Ctrl-C stops it.
`;
}

/**
 * Runs the simulator until SIGINT or SIGTERM, then stops it (every timer and connection) and resolves.
 */
export async function runSimulate(options: SimulateCommandOptions, logger: Logger, out: (text: string) => void): Promise<void> {
  const simulatorOptions: SimulatorOptions = { ...options, logger };
  const simulator = await startSimulator(simulatorOptions);
  out(howTo(simulator.url, options));
  await untilSignal(logger, () => simulator.close());
}
