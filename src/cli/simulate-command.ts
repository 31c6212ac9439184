import type { Command } from 'commander';
import type { Logger } from 'pino';
import { createClient } from '../client/index.js';
import { EVENT_TYPES, isEventType, type EventType } from '../events/index.js';
import { webhookUrlSchema } from '../events/rest-contract.js';
import {
  type ResolvedSimulatorOptions,
  SIMULATOR_DEFAULTS,
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from '../simulator/index.js';
import {
  DEFAULT_SESSION_DIR,
  displayPath,
  removeSimulatorSession,
  sessionFilePath,
  writeSimulatorSession,
  type SimulatorSession,
} from '../service/simulator-session.js';
import { createLogger } from '../logger.js';
import type { CommandContext } from './command-context.js';
import { headlessLine, keepState, loadState } from './simulate-headless.js';
import { untilSignal } from './until-signal.js';

/** The key `simulate --forward-to` registers with and writes to the session file (the simulator takes any sk_test_ key). */
export const SIMULATOR_API_KEY = 'sk_test_local';

/** The options `payhooks simulate` takes, already parsed and checked by the command line. */
export type SimulateCommandOptions = Pick<
  ResolvedSimulatorOptions,
  'port' | 'host' | 'timeScale' | 'duplicateRate' | 'reorder' | 'failRate'
> & {
  /** `manual`: time stands still until `payhooks clock advance`. Default `real`. */
  clock?: 'real' | 'manual' | undefined;
  /** Print one JSON line (address, endpoint, secret, accounts) instead of the how-to, and no log lines. */
  json?: boolean | undefined;
  /** Keep the state in this file across restarts (read at start, written as it changes and at stop). */
  state?: string | undefined;
  /** Register an endpoint at this URL and write the session file. */
  forwardTo?: string | undefined;
  /** The types that endpoint receives. Default: all 19. */
  events?: EventType[] | undefined;
};

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
  forwardTo(value: string): string {
    if (!webhookUrlSchema.safeParse(value).success) {
      throw new Error(
        `--forward-to takes the receiver's URL, https or http on localhost / 127.0.0.1, e.g. http://127.0.0.1:8787/webhooks; not ${JSON.stringify(value)}.`,
      );
    }
    return value;
  },
  events(value: string): EventType[] {
    const names = value
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean);
    const unknown = names.filter((name) => !isEventType(name));
    if (names.length === 0 || unknown.length > 0) {
      throw new Error(
        `--events takes event types separated by commas, e.g. INVOICE_PAID,PAYMENT_COMPLETED; ${unknown.length ? `unknown: ${unknown.join(', ')}` : 'none given'}. Known types: ${EVENT_TYPES.join(', ')}.`,
      );
    }
    return [...new Set(names)] as EventType[];
  },
  clock(value: string): 'real' | 'manual' {
    if (value !== 'real' && value !== 'manual') {
      throw new Error(`--clock takes real or manual (time moves only with payhooks clock advance), not ${JSON.stringify(value)}.`);
    }
    return value;
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

function chaosLine(options: SimulateCommandOptions): string {
  const chaos = [
    options.timeScale !== 1 ? `time scale ${options.timeScale}` : '',
    options.duplicateRate > 0 ? `duplicate rate ${options.duplicateRate}` : '',
    options.reorder ? 'reordering' : '',
    options.failRate > 0 ? `REST fail rate ${options.failRate}` : '',
    options.clock === 'manual' ? 'manual clock (it moves with payhooks clock advance 1d)' : '',
  ].filter(Boolean);
  return chaos.length ? `Chaos: ${chaos.join(', ')}.\n` : '';
}

function howTo(url: string, options: SimulateCommandOptions): string {
  return `Payment Collection Service simulator listening on ${url}
${chaosLine(options)}
  Any key starting with sk_test_ is a staging key (sk_live_ is production: the sandbox refuses it).
  Register a webhook endpoint, e.g. pointing at \`payhooks serve\`:

    curl -s ${url}/v1/webhooks -H 'authorization: Bearer ${SIMULATOR_API_KEY}' -H 'content-type: application/json' \\
      -d '{"input":{"url":"http://127.0.0.1:8787/webhooks","description":"local","enabledEvents":["INVOICE_PAID","PAYMENT_COMPLETED"]}}'

  Its signing secret: GET ${url}/v1/webhooks/{id}/secret (give it to the receiver as PAYHOOKS_WEBHOOK_SECRET).
  Or let the simulator do all that: payhooks simulate --forward-to http://127.0.0.1:8787/webhooks
  The interface: ${url}/openapi.json (or .yaml). Delivery history: GET ${url}/v1/webhook-events.
  Everything is in memory and lost on exit. Ctrl-C stops it.
`;
}

// What to run next, when the simulator registered the endpoint itself: serve needs no setting unless the
// endpoint is on another port than serve's default.
function nextSteps(forwardTo: URL): string {
  const local = ['127.0.0.1', 'localhost'].includes(forwardTo.hostname);
  const port = forwardTo.port || (forwardTo.protocol === 'https:' ? '443' : '80');
  const serve =
    local && forwardTo.pathname === '/webhooks'
      ? [`${port === '8787' ? '' : `PORT=${port} `}payhooks serve`, 'verifies deliveries with the secret above, reads the API here']
      : undefined;
  const lines = [
    ...(serve ? [serve] : []),
    ['payhooks trigger cash-payment', 'customer → invoice → cash payment → paid (payhooks trigger --help lists every flow)'],
  ];
  const width = Math.max(...lines.map(([command]) => command!.length));
  return [
    ...(serve ? [] : [`    Point your receiver at ${forwardTo.href} and give it the signing secret above; then:`]),
    ...lines.map(([command, comment]) => `    ${command!.padEnd(width)}   # ${comment}`),
  ].join('\n');
}

function forwardingHowTo(url: string, options: SimulateCommandOptions, session: SimulatorSession, file: string): string {
  const all = session.enabledEvents.length === EVENT_TYPES.length;
  return `Payment Collection Service simulator listening on ${url}
${chaosLine(options)}
  Forwarding ${all ? `all ${EVENT_TYPES.length} event types` : session.enabledEvents.join(', ')} to ${session.forwardTo} (endpoint ${session.endpointId}).
  Signing secret: ${session.secret}
  Session: ${file} (mode 0600) holds the address, key and secret; payhooks serve and payhooks trigger
  in this folder read it. It is removed when the simulator stops.

  Next, in another terminal in this folder:
${nextSteps(new URL(session.forwardTo))}

  API key: ${SIMULATOR_API_KEY} (any sk_test_ key works). The interface: ${url}/openapi.json. Deliveries: GET ${url}/v1/webhook-events.
  Everything is in memory and lost on exit. Ctrl-C stops it.
`;
}

/** Registers the `--forward-to` endpoint through the simulator's REST interface and writes the session file. */
async function forward(simulator: Simulator, forwardTo: string, events: readonly EventType[], dir: string): Promise<SimulatorSession> {
  // Retried more than usual: with --fail-rate the simulator fails these calls on purpose, and the session depends on them.
  const client = createClient({ apiKey: SIMULATOR_API_KEY, environment: simulator.url, maxRetries: 10 });
  // A state kept with --state may hold the endpoint already: reuse it, so that its id and secret stay as they were.
  const kept = (await client.webhooks.list({ take: 100 })).data.find(
    (endpoint) => endpoint.url === forwardTo && sameEvents(endpoint.enabledEvents, events),
  );
  const endpoint =
    kept ??
    (await client.webhooks.create({
      url: forwardTo,
      description: 'payhooks simulate --forward-to',
      enabledEvents: [...events],
    }));
  const { secret } = await client.webhooks.getSecret(endpoint.id);
  const session: SimulatorSession = {
    version: 1,
    url: simulator.url,
    apiKey: SIMULATOR_API_KEY,
    endpointId: endpoint.id,
    secret,
    forwardTo: endpoint.url,
    enabledEvents: endpoint.enabledEvents,
    pid: process.pid,
    startedAt: new Date().toISOString(),
  };
  await writeSimulatorSession(dir, session);
  return session;
}

function sameEvents(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((type) => b.includes(type));
}

/**
 * Runs the simulator until SIGINT or SIGTERM, then stops it (every timer and connection) and resolves. With
 * `forwardTo`, it first registers an endpoint there for `events` (default: all 19 types) and writes the session
 * file in `sessionDir` (removed again on the way out, before the simulator stops).
 */
export async function runSimulate(
  options: SimulateCommandOptions,
  logger: Logger,
  out: (text: string) => Promise<void>,
  sessionDir: string = DEFAULT_SESSION_DIR,
): Promise<void> {
  if (options.events && !options.forwardTo) throw new Error('--events chooses what --forward-to receives: give --forward-to URL too.');
  const restore = options.state ? loadState(options.state) : undefined;
  const { json: _json, state: _state, forwardTo: _forwardTo, events: _events, ...rest } = options;
  const simulatorOptions: SimulatorOptions = { ...rest, logger, restore };
  const simulator = await startSimulator(simulatorOptions).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    const where = `${options.host ?? SIMULATOR_DEFAULTS.host}:${options.port ?? SIMULATOR_DEFAULTS.port}`;
    throw new Error(`Cannot listen on ${where}: the port is in use (another payhooks simulate?). Stop that process or pass --port.`, {
      cause: err,
    });
  });
  let session: SimulatorSession | undefined;
  try {
    if (options.forwardTo) session = await forward(simulator, options.forwardTo, options.events ?? EVENT_TYPES, sessionDir);
  } catch (err) {
    await simulator.close();
    throw err;
  }
  const kept = options.state ? keepState(simulator, options.state, logger) : undefined;
  if (options.json) await out(headlessLine(simulator, session, SIMULATOR_API_KEY, options.state));
  else {
    await out(
      session ? forwardingHowTo(simulator.url, options, session, displayPath(sessionFilePath(sessionDir))) : howTo(simulator.url, options),
    );
  }
  await untilSignal(logger, async () => {
    if (session) await removeSimulatorSession(sessionDir, session.endpointId);
    await kept?.stop();
    await simulator.close();
  });
}

/** `payhooks simulate`: the local simulator, until a signal. */
export function addSimulateCommand(program: Command, ctx: CommandContext): void {
  program
    .command('simulate')
    .description('run a local, in-memory Payment Collection Service: its REST interface and real signed webhook deliveries')
    .option(
      '--forward-to <url>',
      'register a webhook endpoint at this URL (e.g. http://127.0.0.1:8787/webhooks), print its secret and write ./.payhooks/simulator.json for serve and trigger',
      simulateOptionParsers.forwardTo,
    )
    .option(
      '--events <types>',
      'with --forward-to: the event types it receives, comma-separated (default: all 19)',
      simulateOptionParsers.events,
    )
    .option('--port <port>', 'port to listen on (0: any free port)', simulateOptionParsers.port, 4010)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option(
      '--time-scale <n>',
      'divide the retry delays (2 s … 3 days) and the rotation grace period by n',
      simulateOptionParsers.timeScale,
      1,
    )
    .option('--duplicate-rate <p>', 'probability that a delivery is sent twice', simulateOptionParsers.rate('--duplicate-rate'), 0)
    .option('--reorder', 'buffer deliveries briefly and send them shuffled', false)
    .option(
      '--fail-rate <p>',
      'probability that a REST call answers 503 (for writes, half of them after the write is done)',
      simulateOptionParsers.rate('--fail-rate'),
      0,
    )
    .option(
      '--clock <mode>',
      'real, or manual: time stands still until payhooks clock advance 1d (retries and collections then play in order)',
      simulateOptionParsers.clock,
      'real',
    )
    .option('--json', 'print one JSON line (url, endpointId, secret, accounts) instead of the how-to, then run quietly (no log lines)')
    .option(
      '--state <file>',
      "keep the simulator's state (customers, endpoints and their secrets, invoices, …) in this file across restarts",
    )
    .action(async (opts: SimulateCommandOptions) => {
      await runSimulate(opts, createLogger(opts.json ? { level: 'silent' } : {}), ctx.out);
    });
}
