import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { z } from 'zod';
import { ApiConnectionError, createClient, NotFoundError, ServerError } from '../client/index.js';
import { PayhooksError } from '../errors.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';

// The file where `payhooks simulate --forward-to URL` leaves what `serve` and `trigger` need to reach it:
// the simulator's address, a key, and the endpoint it registered with its signing secret. Written with mode
// 0600 (it holds a secret), removed when the simulator stops. A simulator that died without removing it leaves
// a stale file; readers find that out by asking the address for the endpoint's secret (see probeSimulatorSession).

/** The folder of the session file, relative to the working directory (the embedded database's folder too). */
export const DEFAULT_SESSION_DIR = '.payhooks';
/** The session file's name inside that folder. */
export const SESSION_FILE_NAME = 'simulator.json';

/** One organization of the simulator, as the session file lists it. */
export const sessionAccountSchema = z.object({
  /** Its account id (`default` for a simulator of one organization, else `acct_1`… or the ids given). */
  id: z.string().min(1),
  /** Its staging key: the simulator answers it with this organization's data only. */
  apiKey: z.string().startsWith('sk_test_'),
  /** The endpoint `simulate --forward-to` registered for it. */
  endpointId: z.string().min(1),
  /** That endpoint's signing secret when the file was written. */
  secret: z.string().min(1),
  /** Where its deliveries go (`<forward-to>/<id>` when there are several organizations). */
  forwardTo: z.url(),
});
export type SessionAccount = z.infer<typeof sessionAccountSchema>;

/** What the session file holds. The top-level key, endpoint and secret are the first organization's. */
export const simulatorSessionSchema = z.object({
  version: z.literal(1),
  /** The simulator's base URL. */
  url: z.url(),
  /** A staging key the simulator accepts. */
  apiKey: z.string().startsWith('sk_test_'),
  /** The endpoint `simulate --forward-to` registered. */
  endpointId: z.string().min(1),
  /** Its signing secret when the file was written. */
  secret: z.string().min(1),
  /** Where its deliveries go. */
  forwardTo: z.url(),
  enabledEvents: z.array(z.string()),
  /** The simulator's process id. */
  pid: z.number().int(),
  startedAt: z.iso.datetime(),
  /**
   * Every organization, in order (written by every simulator since `--accounts`; a file without it has one
   * organization, described by the top-level fields).
   */
  accounts: z.array(sessionAccountSchema).min(1).optional(),
});
export type SimulatorSession = z.infer<typeof simulatorSessionSchema>;

/** One account as the service's configuration takes it: what `serve` needs to receive for it and read its API. */
export interface SessionServiceAccount {
  id: string;
  apiKey: string;
  /** The simulator's base URL (every organization's API is there; the key says which). */
  apiUrl: string;
  /** The secrets that verify its deliveries, current first. */
  secrets: string[];
}

/**
 * The session's organizations in the file's words: `accounts` when it lists them, else the one organization
 * of the top-level fields (id `default`). Each with its endpoint, so a caller can ask for the current secret.
 *
 * @example
 * sessionAccountEntries(session).map((account) => account.id); // ['acct_1', 'acct_2', 'acct_3']
 */
export function sessionAccountEntries(session: SimulatorSession): SessionAccount[] {
  return (
    session.accounts ?? [
      {
        id: DEFAULT_ACCOUNT,
        apiKey: session.apiKey,
        endpointId: session.endpointId,
        secret: session.secret,
        forwardTo: session.forwardTo,
      },
    ]
  );
}

/**
 * The session's organizations as service accounts, `{ id, apiKey, apiUrl, secrets }`, with the secrets the file
 * holds (see {@link probeSessionAccounts} for the current ones).
 *
 * @example
 * sessionAccounts(session); // [{ id: 'acct_1', apiKey: 'sk_test_acct_1_…', apiUrl: 'http://127.0.0.1:4010', secrets: ['…'] }, …]
 */
export function sessionAccounts(session: SimulatorSession): SessionServiceAccount[] {
  return sessionAccountEntries(session).map((account) => ({
    id: account.id,
    apiKey: account.apiKey,
    apiUrl: session.url,
    secrets: [account.secret],
  }));
}

/** The outcome of {@link probeSessionAccounts}: every account with its current secret, or why the session is stale. */
export type SessionAccountsProbe = { live: true; accounts: SessionServiceAccount[] } | { live: false; reason: string };

/**
 * Asks the session's simulator for each organization's current endpoint secret, with that organization's own key
 * (another's key would get a 404). Live only when every one answers: a simulator restarted since the file was
 * written has none of these endpoints.
 */
export async function probeSessionAccounts(session: SimulatorSession, timeoutMs = 2_000): Promise<SessionAccountsProbe> {
  const accounts: SessionServiceAccount[] = [];
  for (const account of sessionAccountEntries(session)) {
    const probe = await probeSimulatorSession({ ...session, apiKey: account.apiKey, endpointId: account.endpointId }, timeoutMs);
    if (!probe.live) return { live: false, reason: `account ${account.id}: ${probe.reason}` };
    accounts.push({ id: account.id, apiKey: account.apiKey, apiUrl: session.url, secrets: [probe.secret] });
  }
  return { live: true, accounts };
}

/** A session file that is not one (bad JSON or fields); the message names the file and the problem. */
export class SimulatorSessionError extends PayhooksError {}

/** The session file's path in `dir`. */
export function sessionFilePath(dir: string = DEFAULT_SESSION_DIR): string {
  return join(dir, SESSION_FILE_NAME);
}

/** The path as users see it in messages: relative to the working directory when it is below it. */
export function displayPath(path: string): string {
  const shown = relative(process.cwd(), path);
  return shown.startsWith('..') || shown === '' ? path : shown;
}

/**
 * Writes the session file in `dir` (created if missing) with mode 0600, through a temporary file and a rename
 * so that a reader never sees half a file. Resolves to its path.
 *
 * @example
 * await writeSimulatorSession('.payhooks', { version: 1, url, apiKey: 'sk_test_local', endpointId, secret, … });
 */
export async function writeSimulatorSession(dir: string, session: SimulatorSession): Promise<string> {
  const path = sessionFilePath(dir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temporary = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, `${JSON.stringify(simulatorSessionSchema.parse(session), null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, path);
  return path;
}

/**
 * Reads the session file in `dir`: undefined when there is none; throws a {@link SimulatorSessionError} when
 * the file is not a session (its problem named). Does not check that the simulator still runs: see
 * {@link probeSimulatorSession}.
 *
 * @example
 * const session = await readSimulatorSession('.payhooks');
 */
export async function readSimulatorSession(dir: string = DEFAULT_SESSION_DIR): Promise<SimulatorSession | undefined> {
  const path = sessionFilePath(dir);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SimulatorSessionError(`Cannot read ${displayPath(path)}: ${(err as Error).message}`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new SimulatorSessionError(`${displayPath(path)} is not JSON; delete it and run payhooks simulate --forward-to URL again.`, {
      cause: err,
    });
  }
  const parsed = simulatorSessionSchema.safeParse(json);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.join('.') || '(root)'))].join(', ');
    throw new SimulatorSessionError(
      `${displayPath(path)} is not a simulator session (bad or missing: ${fields}); delete it and run payhooks simulate --forward-to URL again.`,
    );
  }
  return parsed.data;
}

/**
 * Removes the session file in `dir` if it still names `endpointId` (another simulator started since may have
 * replaced it; its file stays). Never throws: the simulator is stopping anyway.
 */
export async function removeSimulatorSession(dir: string, endpointId: string): Promise<void> {
  try {
    const session = await readSimulatorSession(dir);
    if (session?.endpointId === endpointId) await rm(sessionFilePath(dir), { force: true });
  } catch {
    // A file that is not ours, or unreadable: leave it.
  }
}

/** The outcome of {@link probeSimulatorSession}. */
export type SessionProbe = { live: true; secret: string } | { live: false; reason: string };

/**
 * Asks the session's simulator for the endpoint's secret. Live: it answers, and the secret is its current one
 * (a rotation since the file was written is followed). Stale: no answer, or the endpoint is not there (a newer
 * simulator on the same port), with the reason in words.
 */
export async function probeSimulatorSession(session: SimulatorSession, timeoutMs = 2_000): Promise<SessionProbe> {
  const client = createClient({ apiKey: session.apiKey, environment: session.url, maxRetries: 0, timeoutMs, rateLimit: false });
  // A 5xx is the simulator answering (e.g. its --fail-rate), so it is asked again; no answer at all is not
  // retried, so a stopped simulator costs serve's start-up one refused connection, not a backoff.
  for (let attempt = 1; ; attempt++) {
    try {
      const { secret } = await client.webhooks.getSecret(session.endpointId);
      return { live: true, secret };
    } catch (err) {
      if (err instanceof ServerError && attempt < 5) continue;
      return { live: false, reason: staleReason(session, err) };
    }
  }
}

function staleReason(session: SimulatorSession, err: unknown): string {
  if (err instanceof NotFoundError) return `the simulator at ${session.url} has no endpoint ${session.endpointId} (it was restarted)`;
  if (err instanceof ApiConnectionError) return `the simulator at ${session.url} does not answer (it has stopped)`;
  return `the simulator at ${session.url} did not give the endpoint's secret (${err instanceof Error ? err.message : String(err)})`;
}
