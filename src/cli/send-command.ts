import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { EVENT_TYPES, isEventType } from '../events/index.js';
import { parseSecretList } from '../signature/index.js';
import { DEFAULT_SESSION_DIR, readSimulatorSession } from '../service/simulator-session.js';
import { type EnvOf, readEnv } from '../service/environment.js';
import { newId } from '../simulator/ids.js';
import { type SendScheme, sendSigned, signBody } from '../simulator/send-signed.js';
import { SilentFailure, UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { checkUrl } from './simulator-target.js';

/** The options of `payhooks send`. */
export interface SendCommandOptions {
  /** The receiver's URL. Required unless `signOnly`. */
  to?: string | undefined;
  /** Wrap the body as the `data` of a new event of this type (fresh eventId). Default: send the body as it is. */
  type?: string | undefined;
  /** Default: PAYHOOKS_WEBHOOK_SECRET (its first), then the simulator session's. */
  secret?: string | undefined;
  scheme?: SendScheme | undefined;
  /** Print the signed headers as one JSON line instead of sending. */
  signOnly?: boolean | undefined;
}

/** What `payhooks send` prints and whether the receiver answered 2xx. */
export interface SendCommandResult {
  ok: boolean;
  lines: string[];
}

/**
 * Runs `payhooks send FILE|-`: reads the body (a file, or stdin for `-`), signs it with the service's scheme (or
 * Standard Webhooks) and sends it to the receiver, byte for byte; or with `signOnly` prints the headers that sign
 * it. Throws a {@link UsageError} for a bad argument, a missing secret or a body that is not what `--type` needs.
 */
export async function runSend(
  file: string,
  options: SendCommandOptions,
  readInput: () => Promise<Buffer> = readStdin,
  env: EnvOf<'send'> = readEnv('send'),
  sessionDir: string = DEFAULT_SESSION_DIR,
): Promise<SendCommandResult> {
  const scheme = options.scheme ?? 'default';
  if (scheme !== 'default' && scheme !== 'standard-webhooks') {
    throw new UsageError(`--scheme takes default or standard-webhooks, not ${JSON.stringify(scheme)}.`);
  }
  if (!options.signOnly && options.to === undefined) {
    throw new UsageError(
      'Give the receiver with --to URL, e.g. --to http://127.0.0.1:8787/webhooks (or --sign-only to print the headers).',
    );
  }
  const url =
    options.to === undefined ? undefined : checkUrl(options.to, '--to', "the receiver's URL, e.g. http://127.0.0.1:8787/webhooks");
  let secret = options.secret === undefined ? env.PAYHOOKS_WEBHOOK_SECRET?.[0] : parseSecretList(options.secret)[0];
  secret ??= (await readSimulatorSession(sessionDir).catch(() => undefined))?.secret;
  if (!secret) {
    throw new UsageError(
      'No signing secret: pass --secret S or set PAYHOOKS_WEBHOOK_SECRET (or run payhooks simulate --forward-to URL here).',
    );
  }
  const raw = file === '-' ? await readInput() : await readBody(file);
  const body = options.type === undefined ? raw : wrap(raw, options.type, file);
  if (options.signOnly) return { ok: true, lines: [JSON.stringify(signBody({ body, secret, scheme }))] };
  const result = await sendSigned({ url: url!, body, secret, scheme });
  const what = `${body.byteLength} byte${body.byteLength === 1 ? '' : 's'}${options.type ? ` (a new ${options.type} event)` : ''}`;
  if (result.status === null) throw new UsageError(`Could not deliver to ${url}: ${result.error ?? 'no answer'}`);
  return { ok: result.ok, lines: [`sent ${what} to ${url}, signed with the ${scheme} scheme`, `HTTP ${result.status}`, result.body] };
}

async function readBody(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw new UsageError(
      `Cannot read ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}.`,
    );
  }
}

/** The body as the `data` of a new envelope of `type`, with a fresh eventId. */
function wrap(raw: Buffer, type: string, file: string): Buffer {
  if (!isEventType(type))
    throw new UsageError(`--type takes one of the event types: ${EVENT_TYPES.join(', ')}; not ${JSON.stringify(type)}.`);
  let data: unknown;
  try {
    data = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new UsageError(`With --type, ${file === '-' ? 'stdin' : file} must hold the event's data as JSON; it is not JSON.`);
  }
  return Buffer.from(JSON.stringify({ eventId: newId('evt'), eventType: type, data }));
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** `payhooks send FILE|- --to URL`: sign any body and send it. */
export function addSendCommand(program: Command, ctx: CommandContext): void {
  program
    .command('send')
    .description("sign a body (a file, or - for stdin) with the service's scheme and send it to a receiver; exit 0 on a 2xx answer")
    .argument('<file>', 'the body to send byte for byte, or - to read stdin')
    .option('--to <url>', "the receiver's URL, e.g. http://127.0.0.1:8787/webhooks")
    .option('--type <eventType>', "the file holds an event's data: wrap it in a new event of this type (fresh eventId)")
    .option('--secret <secret>', 'the signing secret (default: PAYHOOKS_WEBHOOK_SECRET, then ./.payhooks/simulator.json)')
    .option('--scheme <scheme>', "default (the service's X-Webhook-Signature) or standard-webhooks", 'default')
    .option('--sign-only', 'print the signed headers as one JSON line instead of sending')
    .action(async (file: string, opts: SendCommandOptions) => {
      const result = await runSend(file, opts, readStdin, ctx.env('send'));
      await ctx.out(result.lines.join('\n'));
      if (!result.ok) throw new SilentFailure();
    });
}
