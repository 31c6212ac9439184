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
import { checkUrl, chosenAccount, findSimulatorTarget, type SimulatorTarget } from './simulator-target.js';
import { DEFAULT_SESSION_DIR, readSimulatorSession } from '../service/simulator-session.js';
import { type FlowOverrides, overridePaths, parsePairs } from '../simulator/flow-overrides.js';
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
  /** `PATH=VALUE` values for the objects the flow creates, e.g. `invoice.amount=5000` (repeatable). */
  override?: string[] | undefined;
  /** `PATH=VALUE` metadata pairs to add, e.g. `invoice.metadata.plan=gold`. */
  add?: string[] | undefined;
  /** Metadata keys to remove from what the flow sets, e.g. `customer.metadata.source`. */
  remove?: string[] | undefined;
}

/** The overrides of the command line, or undefined when none was given. */
function overridesOf(options: TriggerCommandOptions): FlowOverrides | undefined {
  const { override = [], add = [], remove = [] } = options;
  if (override.length + add.length + remove.length === 0) return undefined;
  return { set: parsePairs('--override', override), add: parsePairs('--add', add), remove };
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

Overrides change the objects the flow creates, through the same REST calls (the events carry the values):
  --override PATH=VALUE   paths: ${overridePaths(['customer', 'invoice'])
    .filter((path) => !path.includes('.metadata.'))
    .join(', ')}
                          (subscription-cycle: subscription.amount, .currency, .description, .numberOfPayments, .firstCollectionDate)
  --add PATH=VALUE        a metadata pair, e.g. invoice.metadata.plan=gold or customer.metadata.tier=vip
  --remove PATH           a metadata pair the flow sets: customer.metadata.source, invoice.metadata.flow

An event type (e.g. PAYMENT_REFUNDED) runs the first flow that causes it. With --to URL, the catalog's example
of that type is signed (--secret, else PAYHOOKS_WEBHOOK_SECRET, else the session's secret) and sent straight to
the receiver, outside the simulator's state.

Examples:
  payhooks trigger cash-payment
  payhooks trigger cash-payment --override invoice.amount=5000 --override customer.email=ada@example.com
  payhooks trigger refund --simulator http://127.0.0.1:4010
  payhooks trigger CUSTOMER_UPDATED --to http://127.0.0.1:8787/webhooks`;
}

type Target = SimulatorTarget;

async function findSimulator(options: TriggerCommandOptions, env: EnvOf<'trigger'>, sessionDir: string, name: string): Promise<Target> {
  const hint = isEventType(name) ? ` To send the catalog's example of ${name} to a receiver instead, pass --to URL.` : '';
  return findSimulatorTarget(options.simulator, env, sessionDir, `run ${name} in`, hint, options.account);
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
  const overrides = overridesOf(options);
  if (overrides && options.to !== undefined) {
    throw new Error(
      '--override, --add and --remove change the objects a flow creates in the simulator; --to sends a catalog example. Leave out one or the other.',
    );
  }
  if (isFlowName(name)) {
    if (options.to !== undefined) {
      throw new Error(
        `--to sends one catalog event to a receiver; the flow ${name} runs in the simulator, which delivers to its own endpoints. Leave out --to.`,
      );
    }
    return flowCommand(name, await findSimulator(options, env, sessionDir, name), [], overrides);
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
  return flowCommand(flow, target, [`${name} comes from the flow ${flow}; running it.`], overrides);
}

async function flowCommand(
  flow: FlowName,
  target: Target,
  preface: string[],
  overrides: FlowOverrides | undefined,
): Promise<TriggerCommandResult> {
  const description = FLOW_DESCRIPTIONS.find((f) => f.name === flow)!;
  const changes = overrides
    ? [
        ...Object.entries(overrides.set ?? {}).map(([path, value]) => `${path}=${value}`),
        ...Object.entries(overrides.add ?? {}).map(([path, value]) => `+${path}=${value}`),
        ...(overrides.remove ?? []).map((path) => `-${path}`),
      ]
    : [];
  const header = [
    ...preface,
    `flow ${flow}: ${description.summary}`,
    `simulator: ${target.url} (from ${target.source})${target.account && target.account.id !== SINGLE_ACCOUNT_ID ? `, account ${target.account.id}` : ''}`,
    ...(changes.length > 0 ? [`overrides: ${changes.join(', ')}`] : []),
    '',
  ];
  let result: FlowResult;
  try {
    result = await runFlow(flow, { baseUrl: target.url, apiKey: target.apiKey, overrides });
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

/** `: did you mean X?` for a type name close to a known one, as on() says it; empty otherwise. */
function didYouMean(name: string): string {
  const close = closestEventTypes(name);
  return close.length > 0 ? `: did you mean ${close.join(' or ')}?` : '';
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
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
    .option(
      '--override <path=value>',
      'a value for an object the flow creates, e.g. invoice.amount=5000 or customer.email=a@example.com (repeatable)',
      collect,
    )
    .option('--add <path=value>', 'a metadata pair to add, e.g. invoice.metadata.plan=gold (repeatable)', collect)
    .option('--remove <path>', "a metadata key of the flow's to leave out, e.g. customer.metadata.source (repeatable)", collect)
    .addHelpText('after', flowsHelp())
    .action(async (name: string, opts: TriggerCommandOptions) => {
      const result = await runTrigger(name, opts);
      await out(result.lines.join('\n'));
      if (result.error) await err(`payhooks: ${result.error}`);
      if (!result.ok) throw new SilentFailure();
    });
}
