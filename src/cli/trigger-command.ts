import { EVENT_TYPES, isEventType } from '../events/index.js';
import { parseSecretList } from '../signature/secret-list.js';
import { triggerEvent } from '../simulator/index.js';
import { type EnvOf, readEnv } from './env.js';

/** What `payhooks trigger` prints and whether the receiver accepted the event. */
export interface TriggerCommandResult {
  ok: boolean;
  lines: string[];
}

/**
 * Checks the arguments of `payhooks trigger`, sends the event, and describes the answer. Throws an Error with a
 * message for the user when an argument is wrong or the receiver cannot be reached. Without `--secret`, signs
 * with the first (current) secret of `PAYHOOKS_WEBHOOK_SECRET`.
 */
export async function runTrigger(
  eventType: string,
  options: { to: string; secret?: string | undefined },
  env: EnvOf<'trigger'> = readEnv('trigger'),
): Promise<TriggerCommandResult> {
  if (!isEventType(eventType))
    throw new Error(`Unknown event type ${JSON.stringify(eventType)}. Known types:\n  ${EVENT_TYPES.join('\n  ')}`);
  let url: URL;
  try {
    url = new URL(options.to);
  } catch {
    throw new Error(`--to takes the receiver's URL, e.g. http://127.0.0.1:8787/webhooks, not ${JSON.stringify(options.to)}.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`--to must be an http or https URL, not ${JSON.stringify(options.to)}.`);
  // During a rotation the variable holds several secrets; the first is the current one.
  const secret = options.secret === undefined ? env.PAYHOOKS_WEBHOOK_SECRET?.[0] : parseSecretList(options.secret)[0];
  if (!secret) throw new Error('No signing secret: pass --secret S or set PAYHOOKS_WEBHOOK_SECRET.');
  const result = await triggerEvent({ eventType, url: url.href, secret });
  if (result.status === null) throw new Error(`Could not deliver to ${url.href}: ${result.error ?? 'no answer'}`);
  return { ok: result.ok, lines: [`sent ${eventType} ${result.eventId} to ${url.href}`, `HTTP ${result.status}`, result.body] };
}
