import {
  DEFAULT_SESSION_DIR,
  displayPath,
  readSimulatorSession,
  sessionAccountEntries,
  sessionFilePath,
  type SessionAccount,
  type SimulatorSession,
} from '../service/simulator-session.js';
import { SIMULATOR_API_KEY } from './simulate-command.js';

/** The simulator (or service) a command talks to, and where that came from. */
export interface SimulatorTarget {
  url: string;
  apiKey: string;
  /** Where the URL came from, for the output: `--simulator`, `PAYHOOKS_API_URL` or the session file's path. */
  source: string;
  session: SimulatorSession | undefined;
  /** The session's organization it acts as (`--account`, else the session's first); undefined without a session or `--account`. */
  account?: SessionAccount | undefined;
}

/**
 * The organization `--account` names in the session file (else undefined: no `--account`). Throws with the ids
 * there are when the file is missing or does not list it.
 */
export async function chosenAccount(
  account: string | undefined,
  sessionDir: string = DEFAULT_SESSION_DIR,
): Promise<SessionAccount | undefined> {
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
 * Finds the simulator a command runs against: `--simulator URL`, else `PAYHOOKS_API_URL` (key `PAYHOOKS_API_KEY`,
 * default `sk_test_local`), else the session file `payhooks simulate --forward-to` wrote (key: `accountId`'s, else
 * its first organization's). Throws an Error that says
 * how to start one when there is none; `what` names the command's purpose in it.
 */
export async function findSimulatorTarget(
  simulator: string | undefined,
  env: { PAYHOOKS_API_KEY?: string | undefined; PAYHOOKS_API_URL?: string | undefined },
  sessionDir: string = DEFAULT_SESSION_DIR,
  what = 'talk to',
  /** A sentence added to the message when there is no simulator. */
  hint = '',
  /** `--account`: the session's organization whose key to use (simulate --accounts). */
  accountId?: string,
): Promise<SimulatorTarget> {
  // --account's key wins over PAYHOOKS_API_KEY: naming the organization is naming its key.
  const account = await chosenAccount(accountId, sessionDir);
  const envKey = account?.apiKey ?? env.PAYHOOKS_API_KEY;
  if (simulator !== undefined) {
    return {
      url: checkUrl(simulator, '--simulator'),
      apiKey: envKey ?? SIMULATOR_API_KEY,
      source: '--simulator',
      session: undefined,
      account,
    };
  }
  const envUrl = env.PAYHOOKS_API_URL;
  if (envUrl) {
    return {
      url: checkUrl(envUrl, 'PAYHOOKS_API_URL'),
      apiKey: envKey ?? SIMULATOR_API_KEY,
      source: 'PAYHOOKS_API_URL',
      session: undefined,
      account,
    };
  }
  const session = await readSimulatorSession(sessionDir);
  if (session) {
    const chosen = account ?? sessionAccountEntries(session)[0]!;
    return { url: session.url, apiKey: chosen.apiKey, source: displayPath(sessionFilePath(sessionDir)), session, account: chosen };
  }
  throw new Error(
    `No simulator to ${what}: start one with payhooks simulate --forward-to http://127.0.0.1:8787/webhooks in this folder (it writes ${displayPath(sessionFilePath(sessionDir))}), or pass --simulator URL.${hint}`,
  );
}

/** `value` without trailing slashes, or an Error naming `what` unless it is an http(s) URL. */
export function checkUrl(value: string, what: string, expected = 'an http or https URL, e.g. http://127.0.0.1:4010'): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${what} takes ${expected}, not ${JSON.stringify(value)}.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${what} must be an http or https URL, not ${JSON.stringify(value)}.`);
  }
  return value.replace(/\/+$/, '');
}
