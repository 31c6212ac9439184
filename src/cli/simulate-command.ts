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
  type SimulatorOrganization,
  startSimulator,
} from '../simulator/index.js';
import { resolveAccounts } from '../simulator/options.js';
import { SINGLE_ORGANIZATION_KEY } from '../simulator/organizations.js';
import {
  DEFAULT_SESSION_DIR,
  displayPath,
  removeSimulatorSession,
  sessionFilePath,
  writeSimulatorSession,
  type SessionAccount,
  type SimulatorSession,
} from '../service/simulator-session.js';
import { createLogger } from '../logger.js';
import type { CommandContext } from './command-context.js';
import { headlessLine, keepState, loadState } from './simulate-headless.js';
import { type StartupSignals, untilSignal, watchStartupSignals } from './until-signal.js';

/** The key `simulate --forward-to` registers with and writes to the session file (one organization takes any sk_test_ key). */
export const SIMULATOR_API_KEY = SINGLE_ORGANIZATION_KEY;

/** Where `--forward-to` is replaced by each organization's id. */
export const ACCOUNT_PLACEHOLDER = '{account}';

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
  /** The organizations: a count or their ids. Default 1. */
  accounts?: number | string[] | undefined;
};

/**
 * Where one organization's deliveries go: `{account}` in the URL is replaced by its id; without it, with several
 * organizations, the id is appended to the path (`…/webhooks` → `…/webhooks/acct_1`); one organization's URL is
 * taken as it is.
 *
 * @example
 * forwardUrlFor('http://127.0.0.1:8787/webhooks', 'acct_2', 3); // 'http://127.0.0.1:8787/webhooks/acct_2'
 */
export function forwardUrlFor(forwardTo: string, accountId: string, accountCount: number): string {
  if (forwardTo.includes(ACCOUNT_PLACEHOLDER)) return forwardTo.replaceAll(ACCOUNT_PLACEHOLDER, accountId);
  if (accountCount === 1) return forwardTo;
  const url = new URL(forwardTo);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${accountId}`;
  return url.href;
}

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
    if (!webhookUrlSchema.safeParse(value.replaceAll(ACCOUNT_PLACEHOLDER, 'account')).success) {
      throw new Error(
        `--forward-to takes the receiver's URL, https or http on localhost / 127.0.0.1, e.g. http://127.0.0.1:8787/webhooks; not ${JSON.stringify(value)}.`,
      );
    }
    return value;
  },
  accounts(value: string): number | string[] {
    const given: number | string[] = /^\d+$/.test(value.trim())
      ? Number(value.trim())
      : value
          .split(',')
          .map((id) => id.trim())
          .filter(Boolean);
    try {
      resolveAccounts(given);
    } catch (err) {
      throw new Error(
        `--accounts takes a number of organizations (e.g. 3: acct_1, acct_2, acct_3) or their ids separated by commas (e.g. gym,school): ${(err as Error).message}`,
      );
    }
    return given;
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

// With several organizations, their keys are the only ones it takes, so they are printed.
function keysLine(organizations: readonly SimulatorOrganization[]): string {
  if (organizations.length === 1)
    return '  Any key starting with sk_test_ is a staging key (sk_live_ is production: the sandbox refuses it).';
  const width = Math.max(...organizations.map((organization) => organization.id.length));
  return [
    `  ${organizations.length} organizations; each key sees only its own organization's data (sk_live_ in place of sk_test_: production):`,
    ...organizations.map((organization) => `    ${organization.id.padEnd(width)}  ${organization.apiKey}`),
  ].join('\n');
}

function howTo(url: string, options: SimulateCommandOptions, organizations: readonly SimulatorOrganization[]): string {
  const key = organizations[0]!.apiKey;
  return `Payment Collection Service simulator listening on ${url}
${chaosLine(options)}
${keysLine(organizations)}
  Register a webhook endpoint, e.g. pointing at \`payhooks serve\`:

    curl -s ${url}/v1/webhooks -H 'authorization: Bearer ${key}' -H 'content-type: application/json' \\
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
  const types = all ? `all ${EVENT_TYPES.length} event types` : session.enabledEvents.join(', ');
  const accounts = session.accounts ?? [];
  if (accounts.length > 1) return organizationsHowTo(url, options, accounts, types, file);
  return `Payment Collection Service simulator listening on ${url}
${chaosLine(options)}
  Forwarding ${types} to ${session.forwardTo} (endpoint ${session.endpointId}).
  Signing secret: ${session.secret}
  Session: ${file} (mode 0600) holds the address, key and secret; payhooks serve and payhooks trigger
  in this folder read it. It is removed when the simulator stops.

  Next, in another terminal in this folder:
${nextSteps(new URL(session.forwardTo))}

  API key: ${SIMULATOR_API_KEY} (any sk_test_ key works). The interface: ${url}/openapi.json. Deliveries: GET ${url}/v1/webhook-events.
  Everything is in memory and lost on exit. Ctrl-C stops it.
`;
}

// Several organizations: one block each, with what a receiver needs for it (its route, key and secret).
function organizationsHowTo(
  url: string,
  options: SimulateCommandOptions,
  accounts: readonly SessionAccount[],
  types: string,
  file: string,
): string {
  const width = Math.max(...accounts.map((account) => account.id.length));
  const blocks = accounts.map(
    (account) =>
      `    ${account.id.padEnd(width)}  ${account.forwardTo}  (endpoint ${account.endpointId})\n` +
      `    ${' '.repeat(width)}  API key ${account.apiKey}\n` +
      `    ${' '.repeat(width)}  signing secret ${account.secret}`,
  );
  return `Payment Collection Service simulator listening on ${url}
${chaosLine(options)}
  ${accounts.length} organizations, each with its own API key, endpoint and signing secret; a key sees only its own
  organization's data. Forwarding ${types}:
${blocks.join('\n')}
  Session: ${file} (mode 0600) lists them; payhooks serve and payhooks trigger in this folder read it.
  It is removed when the simulator stops.

  Next, in another terminal in this folder:
${accountsNextSteps(accounts)}

  The interface: ${url}/openapi.json. Deliveries: GET ${url}/v1/webhook-events (each key sees its own).
  Everything is in memory and lost on exit. Ctrl-C stops it.
`;
}

// serve takes the session's organizations as its accounts, each on /webhooks/<id>: say so when that is where they go.
function accountsNextSteps(accounts: readonly SessionAccount[]): string {
  const first = new URL(accounts[0]!.forwardTo);
  const port = first.port || (first.protocol === 'https:' ? '443' : '80');
  const toServe = accounts.every((account) => {
    const url = new URL(account.forwardTo);
    return ['127.0.0.1', 'localhost'].includes(url.hostname) && url.port === first.port && url.pathname === `/webhooks/${account.id}`;
  });
  const lines = [
    ...(toServe
      ? [
          [
            `${port === '8787' ? '' : `PORT=${port} `}payhooks serve`,
            'receives each organization on /webhooks/<id>, verified with its own secret',
          ],
        ]
      : []),
    [`payhooks trigger cash-payment --account ${accounts[1]!.id}`, `runs in that organization (default: ${accounts[0]!.id})`],
  ];
  const width = Math.max(...lines.map(([command]) => command!.length));
  return lines.map(([command, comment]) => `    ${command!.padEnd(width)}   # ${comment}`).join('\n');
}

/**
 * Registers each organization's `--forward-to` endpoint through the simulator's REST interface, with that
 * organization's own key, and writes the session file listing them.
 */
export async function forwardOrganizations(
  simulator: Simulator,
  forwardTo: string,
  events: readonly EventType[],
  dir: string,
): Promise<SimulatorSession> {
  const organizations = simulator.organizations();
  const accounts: SessionAccount[] = [];
  for (const organization of organizations) {
    accounts.push(
      await registerEndpoint(simulator.url, organization, forwardUrlFor(forwardTo, organization.id, organizations.length), events),
    );
  }
  const first = accounts[0]!;
  const session: SimulatorSession = {
    version: 1,
    url: simulator.url,
    apiKey: first.apiKey,
    endpointId: first.endpointId,
    secret: first.secret,
    forwardTo: first.forwardTo,
    enabledEvents: [...events],
    pid: process.pid,
    startedAt: new Date().toISOString(),
    accounts,
  };
  await writeSimulatorSession(dir, session);
  return session;
}

async function registerEndpoint(
  url: string,
  organization: SimulatorOrganization,
  forwardTo: string,
  events: readonly EventType[],
): Promise<SessionAccount> {
  // Retried more than usual: with --fail-rate the simulator fails these calls on purpose, and the session depends on them.
  const client = createClient({ apiKey: organization.apiKey, environment: url, maxRetries: 10 });
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
  return { id: organization.id, apiKey: organization.apiKey, endpointId: endpoint.id, secret, forwardTo: endpoint.url };
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
  if (options.state && options.accounts !== undefined && resolveAccounts(options.accounts).length > 1) {
    throw new Error("--state keeps one organization's state; leave out --accounts or --state.");
  }
  // A SIGTERM while it starts (or just after it printed its URL) is kept, not the death of the process mid-write.
  const startup = watchStartupSignals();
  try {
    await simulateUntilSignal(options, logger, out, sessionDir, startup);
  } finally {
    startup.dispose();
  }
}

/** {@link runSimulate}'s work, told of the signals that came while it started. */
async function simulateUntilSignal(
  options: SimulateCommandOptions,
  logger: Logger,
  out: (text: string) => Promise<void>,
  sessionDir: string,
  startup: StartupSignals,
): Promise<void> {
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
    if (options.forwardTo) session = await forwardOrganizations(simulator, options.forwardTo, options.events ?? EVENT_TYPES, sessionDir);
  } catch (err) {
    await simulator.close();
    throw err;
  }
  const kept = options.state ? keepState(simulator, options.state, logger) : undefined;
  if (options.json) await out(headlessLine(simulator, session, options.state));
  else {
    await out(
      session
        ? forwardingHowTo(simulator.url, options, session, displayPath(sessionFilePath(sessionDir)))
        : howTo(simulator.url, options, simulator.organizations()),
    );
  }
  await untilSignal(
    logger,
    async () => {
      if (session) await removeSimulatorSession(sessionDir, session.endpointId);
      await kept?.stop();
      await simulator.close();
    },
    { startup },
  );
}

/** `payhooks simulate`: the local simulator, until a signal. */
export function addSimulateCommand(program: Command, ctx: CommandContext): void {
  program
    .command('simulate')
    .description('run a local, in-memory Payment Collection Service: its REST interface and real signed webhook deliveries')
    .option(
      '--forward-to <url>',
      "register a webhook endpoint at this URL (e.g. http://127.0.0.1:8787/webhooks; with --accounts, each organization's at URL/<id>, or where {account} is), print its secret and write ./.payhooks/simulator.json for serve and trigger",
      simulateOptionParsers.forwardTo,
    )
    .option(
      '--events <types>',
      'with --forward-to: the event types it receives, comma-separated (default: all 19)',
      simulateOptionParsers.events,
    )
    .option(
      '--accounts <n|ids>',
      'run several organizations, each with its own API key, endpoint and secret: a number (3: acct_1, acct_2, acct_3) or ids separated by commas (default 1)',
      simulateOptionParsers.accounts,
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
