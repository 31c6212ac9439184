import type { Command } from 'commander';
import { ApiConnectionError, NotFoundError } from '../client/errors.js';
import { closestEventTypes } from '../worker/unknown-event-type.js';
import { EVENT_TYPES, isEventType } from '../events/index.js';
import { parseSecretList } from '../signature/index.js';
import { flowFor, isFlowName } from '../simulator/flows.js';
import { FLOW_DESCRIPTIONS, FLOW_NAMES, FlowError, runFlow, triggerEvent, type FlowName, type FlowResult } from '../simulator/index.js';
import { SINGLE_ACCOUNT_ID } from '../simulator/options.js';
import { SilentFailure } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { SIMULATOR_API_KEY } from './simulate-command.js';
import {
  DEFAULT_SESSION_DIR,
  displayPath,
  readSimulatorSession,
  sessionAccountEntries,
  sessionFilePath,
  type SessionAccount,
  type SimulatorSession,
} from '../service/simulator-session.js';
import { type EnvOf, readEnv } from '../service/environment.js';

/** What `payhooks trigger` prints, whether every step was accepted, and the error to print on stderr if not. */
export interface TriggerCommandResult {
  ok: boolean;
  lines: string[];
  /** Why it failed, for stderr (the lines above say what was done before). */
  error?: string | undefined;
}

/** The options of `payhooks trigger`. */
export interface TriggerCommandOptions {
  /** Send the catalog's example of an event type straight to this receiver (no simulator involved). */
  to?: string | undefined;
  /** The secret `--to` signs with. Default: PAYHOOKS_WEBHOOK_SECRET, then the session's. */
  secret?: string | undefined;
  /** The simulator a flow runs against. Default: PAYHOOKS_API_URL, then the session file's. */
  simulator?: string | undefined;
  /** The organization of the session file to act as: its key for a flow, its secret for `--to`. Default: the first. */
  account?: string | undefined;
}

/** The `--help` text that lists the flows, one line each. */
export function flowsHelp(): string {
  const width = Math.max(...FLOW_DESCRIPTIONS.map((flow) => flow.name.length));
  return `
Flows (each creates its own customer and resources through the simulator's REST interface; the simulator
emits the events and delivers them to its endpoints, e.g. the one \`payhooks simulate --forward-to URL\` made):
${FLOW_DESCRIPTIONS.map((flow) => `  ${flow.name.padEnd(width)}  ${flow.summary}`).join('\n')}

The simulator is found through --simulator URL, else PAYHOOKS_API_URL (key: PAYHOOKS_API_KEY, default
sk_test_local), else ./.payhooks/simulator.json (written by payhooks simulate --forward-to URL; key: its own).

An event type (e.g. PAYMENT_REFUNDED) runs the first flow that causes it. With --to URL, the catalog's example
of that type is signed (--secret, else PAYHOOKS_WEBHOOK_SECRET, else the session's secret) and sent straight to
the receiver, outside the simulator's state.

Examples:
  payhooks trigger cash-payment
  payhooks trigger refund --simulator http://127.0.0.1:4010
  payhooks trigger CUSTOMER_UPDATED --to http://127.0.0.1:8787/webhooks`;
}

interface Target {
  url: string;
  apiKey: string;
  /** Where the URL came from, for the output. */
  source: string;
  session: SimulatorSession | undefined;
  /** The session's organization the flow runs in. */
  account: SessionAccount | undefined;
}

/**
 * The organization `--account` names in the session file (else undefined: no `--account`). Throws with the ids
 * there are when the file is missing or does not list it.
 */
async function chosenAccount(account: string | undefined, sessionDir: string): Promise<SessionAccount | undefined> {
  if (account === undefined) return undefined;
  const file = displayPath(sessionFilePath(sessionDir));
  const session = await readSimulatorSession(sessionDir);
  if (!session) {
    throw new Error(
      `--account picks an organization of the simulator session, and there is none (${file}): start payhooks simulate --accounts N --forward-to URL in this folder.`,
    );
  }
  const accounts = sessionAccountEntries(session);
  const found = accounts.find((entry) => entry.id === account);
  if (!found)
    throw new Error(`No account ${JSON.stringify(account)} in ${file}; it lists ${accounts.map((entry) => entry.id).join(', ')}.`);
  return found;
}

/**
 * Runs `payhooks trigger NAME`: a flow through the simulator, an event type's flow, or (with `--to`) one
 * catalog event sent to a receiver. Throws an Error with a message for the user when an argument is wrong or
 * nothing can be reached; a flow the simulator stops comes back with `ok: false`, the steps done and the error.
 */
export async function runTrigger(
  name: string,
  options: TriggerCommandOptions,
  env: EnvOf<'trigger'> = readEnv('trigger'),
  sessionDir: string = DEFAULT_SESSION_DIR,
): Promise<TriggerCommandResult> {
  if (isFlowName(name)) {
    if (options.to !== undefined) {
      throw new Error(
        `--to sends one catalog event to a receiver; the flow ${name} runs in the simulator, which delivers to its own endpoints. Leave out --to.`,
      );
    }
    return flowCommand(name, await findSimulator(options, env, sessionDir, name), []);
  }
  if (!isEventType(name)) {
    throw new Error(
      /^[A-Z][A-Z_]*$/.test(name)
        ? `Unknown event type ${JSON.stringify(name)}${didYouMean(name)}. Known types:\n  ${EVENT_TYPES.join('\n  ')}\nFlows: ${FLOW_DESCRIPTIONS.map((f) => f.name).join(', ')}.`
        : `Unknown flow ${JSON.stringify(name)}. Flows: ${FLOW_DESCRIPTIONS.map((f) => f.name).join(', ')} (payhooks trigger --help says what each does); or an event type such as INVOICE_PAID.`,
    );
  }
  if (options.to !== undefined) {
    // An explicit --account signs with that organization's secret, over PAYHOOKS_WEBHOOK_SECRET (--secret still wins).
    const account = await chosenAccount(options.account, sessionDir);
    const secret = options.secret ?? account?.secret ?? env.PAYHOOKS_WEBHOOK_SECRET;
    return sendExample(name, options.to, secret, sessionDir);
  }

  const target = await findSimulator(options, env, sessionDir, name);
  const flow = flowFor(name);
  if (!flow) {
    const to = target.session?.forwardTo ?? 'http://127.0.0.1:8787/webhooks';
    throw new Error(
      `No flow causes ${name}: the simulator has no call that does. Send the catalog's example straight to the receiver instead: payhooks trigger ${name} --to ${to}`,
    );
  }
  return flowCommand(flow, target, [`${name} comes from the flow ${flow}; running it.`]);
}

async function findSimulator(options: TriggerCommandOptions, env: EnvOf<'trigger'>, sessionDir: string, name: string): Promise<Target> {
  // --account's key wins over PAYHOOKS_API_KEY: naming the organization is naming its key.
  const account = await chosenAccount(options.account, sessionDir);
  const envKey = account?.apiKey ?? env.PAYHOOKS_API_KEY;
  if (options.simulator !== undefined) {
    return {
      url: checkUrl(options.simulator, '--simulator'),
      apiKey: envKey ?? SIMULATOR_API_KEY,
      source: '--simulator',
      session: undefined,
      account,
    };
  }
  const envUrl = env.PAYHOOKS_API_URL;
  if (envUrl)
    return {
      url: checkUrl(envUrl, 'PAYHOOKS_API_URL'),
      apiKey: envKey ?? SIMULATOR_API_KEY,
      source: 'PAYHOOKS_API_URL',
      session: undefined,
      account,
    };
  const session = await readSimulatorSession(sessionDir);
  if (session) {
    const chosen = account ?? sessionAccountEntries(session)[0]!;
    return { url: session.url, apiKey: chosen.apiKey, source: displayPath(sessionFilePath(sessionDir)), session, account: chosen };
  }
  throw new Error(
    `No simulator to run ${name} in: start one with payhooks simulate --forward-to http://127.0.0.1:8787/webhooks in this folder (it writes ${displayPath(sessionFilePath(sessionDir))}), or pass --simulator URL.${isEventType(name) ? ` To send the catalog's example of ${name} to a receiver instead, pass --to URL.` : ''}`,
  );
}

async function flowCommand(flow: FlowName, target: Target, preface: string[]): Promise<TriggerCommandResult> {
  const description = FLOW_DESCRIPTIONS.find((f) => f.name === flow)!;
  const header = [
    ...preface,
    `flow ${flow}: ${description.summary}`,
    `simulator: ${target.url} (from ${target.source})${target.account && target.account.id !== SINGLE_ACCOUNT_ID ? `, account ${target.account.id}` : ''}`,
    '',
  ];
  let result: FlowResult;
  try {
    result = await runFlow(flow, { baseUrl: target.url, apiKey: target.apiKey });
  } catch (err) {
    if (!(err instanceof FlowError)) throw err;
    return {
      ok: false,
      lines: [...header, ...stepLines(err.steps)],
      error: `${err.message.replace(/^payhooks: /, '')}${hint(err, target)}`,
    };
  }
  const width = Math.max(...result.events.map((event) => event.eventType.length));
  const forwarding = target.session
    ? `The simulator delivers them to ${target.account?.forwardTo ?? target.session.forwardTo} (endpoint ${target.account?.endpointId ?? target.session.endpointId}) when subscribed, with retries;`
    : 'The simulator delivers them to the endpoints subscribed to them, with retries;';
  return {
    ok: true,
    lines: [
      ...header,
      ...stepLines(result.steps),
      '',
      `${result.events.length} event${result.events.length === 1 ? '' : 's'} emitted:`,
      ...result.events.map((event) => {
        const skipped =
          target.session && !target.session.enabledEvents.includes(event.eventType) ? '  (not forwarded: not in --events)' : '';
        return `  ${event.eventType.padEnd(width)}  ${event.eventId}${skipped}`;
      }),
      `${forwarding} history: GET ${target.url}/v1/webhook-events`,
    ],
  };
}

function stepLines(steps: readonly { call: string; result: string }[]): string[] {
  return steps.map((step) => `  ${step.call}\n      → ${step.result}`);
}

function hint(err: FlowError, target: Target): string {
  if (err.cause instanceof ApiConnectionError) {
    return target.session
      ? `\nThe simulator of ${target.source} does not answer: it has stopped. Start it again with payhooks simulate --forward-to ${target.session.forwardTo}.`
      : `\nNothing answers at ${target.url}: is payhooks simulate running there?`;
  }
  if (err.cause instanceof NotFoundError && err.cause.path?.startsWith('/v1/sandbox/') && err.cause.serverMessage?.startsWith('No route')) {
    return `\n${target.url} does not have the simulator's sandbox calls: flows run against payhooks simulate, not the real service.`;
  }
  return '';
}

async function sendExample(
  eventType: string,
  to: string,
  secretOption: string | readonly string[] | undefined,
  sessionDir: string,
): Promise<TriggerCommandResult> {
  const url = new URL(checkUrl(to, '--to', "the receiver's URL, e.g. http://127.0.0.1:8787/webhooks"));
  // During a rotation the variable holds several secrets; the first is the current one.
  let secret = secretOption === undefined ? undefined : parseSecretList(secretOption)[0];
  secret ??= (await readSimulatorSession(sessionDir).catch(() => undefined))?.secret;
  if (!secret)
    throw new Error('No signing secret: pass --secret S or set PAYHOOKS_WEBHOOK_SECRET (or run payhooks simulate --forward-to URL here).');
  const result = await triggerEvent({ eventType, url: url.href, secret });
  if (result.status === null) throw new Error(`Could not deliver to ${url.href}: ${result.error ?? 'no answer'}`);
  return {
    ok: result.ok,
    lines: [
      `sent ${eventType} ${result.eventId} to ${url.href} (the catalog's example: its ids match nothing in a simulator; payhooks trigger --help lists the flows)`,
      `HTTP ${result.status}`,
      result.body,
    ],
  };
}

function checkUrl(value: string, what: string, expected = 'an http or https URL, e.g. http://127.0.0.1:4010'): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${what} takes ${expected}, not ${JSON.stringify(value)}.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`${what} must be an http or https URL, not ${JSON.stringify(value)}.`);
  return value.replace(/\/+$/, '');
}

/** `: did you mean X?` for a type name close to a known one, as on() says it; empty otherwise. */
function didYouMean(name: string): string {
  const close = closestEventTypes(name);
  return close.length > 0 ? `: did you mean ${close.join(' or ')}?` : '';
}

/** `payhooks trigger`: a flow through the simulator, or one event type straight to a receiver. */
export function addTriggerCommand(program: Command, ctx: CommandContext): void {
  const { out, err } = ctx;
  program
    .command('trigger')
    .description(
      'run a flow (e.g. cash-payment) through the simulator, which emits and delivers its events; exit 0 when every step is accepted',
    )
    .argument('<flow|type>', `a flow (${FLOW_NAMES.join(', ')}) or an event type, e.g. INVOICE_PAID`)
    .option('--simulator <url>', 'the simulator to run the flow in (default: PAYHOOKS_API_URL, then ./.payhooks/simulator.json)')
    .option('--to <url>', "with an event type: send the catalog's example straight to this receiver, e.g. http://127.0.0.1:8787/webhooks")
    .option('--secret <secret>', 'with --to: the secret to sign with (default: PAYHOOKS_WEBHOOK_SECRET, then the session file)')
    .option(
      '--account <id>',
      'the organization of ./.payhooks/simulator.json to act as (simulate --accounts): its key for a flow, its secret for --to (default: the first)',
    )
    .addHelpText('after', flowsHelp())
    .action(async (name: string, opts: TriggerCommandOptions) => {
      const result = await runTrigger(name, opts);
      await out(result.lines.join('\n'));
      if (result.error) await err(`payhooks: ${result.error}`);
      if (!result.ok) throw new SilentFailure();
    });
}
