import {
  DEFAULT_SESSION_DIR,
  displayPath,
  readSimulatorSession,
  sessionFilePath,
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
}

/**
 * Finds the simulator a command runs against: `--simulator URL`, else `PAYHOOKS_API_URL` (key `PAYHOOKS_API_KEY`,
 * default `sk_test_local`), else the session file `payhooks simulate --forward-to` wrote. Throws an Error that says
 * how to start one when there is none; `what` names the command's purpose in it.
 */
export async function findSimulatorTarget(
  simulator: string | undefined,
  env: { PAYHOOKS_API_KEY?: string | undefined; PAYHOOKS_API_URL?: string | undefined },
  sessionDir: string = DEFAULT_SESSION_DIR,
  what = 'talk to',
  /** A sentence added to the message when there is no simulator. */
  hint = '',
): Promise<SimulatorTarget> {
  const envKey = env.PAYHOOKS_API_KEY;
  if (simulator !== undefined) {
    return { url: checkUrl(simulator, '--simulator'), apiKey: envKey ?? SIMULATOR_API_KEY, source: '--simulator', session: undefined };
  }
  const envUrl = env.PAYHOOKS_API_URL;
  if (envUrl) {
    return {
      url: checkUrl(envUrl, 'PAYHOOKS_API_URL'),
      apiKey: envKey ?? SIMULATOR_API_KEY,
      source: 'PAYHOOKS_API_URL',
      session: undefined,
    };
  }
  const session = await readSimulatorSession(sessionDir);
  if (session) return { url: session.url, apiKey: session.apiKey, source: displayPath(sessionFilePath(sessionDir)), session };
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
