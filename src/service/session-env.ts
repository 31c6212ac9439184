import type { Logger } from 'pino';
import type { ServiceEnv } from './service-defaults.js';
import {
  DEFAULT_SESSION_DIR,
  displayPath,
  probeSessionAccounts,
  probeSimulatorSession,
  readSimulatorSession,
  type SessionServiceAccount,
  sessionAccountEntries,
  sessionFilePath,
  type SimulatorSession,
  SimulatorSessionError,
} from './simulator-session.js';

/**
 * The environment `serve` runs with, completed from a running simulator's session file when the environment
 * leaves the secret out: with `PAYHOOKS_WEBHOOK_SECRET` unset and `<dir>/simulator.json` naming a simulator that
 * answers, the secret is the session endpoint's current one, and (only when `PAYHOOKS_API_KEY` and
 * `PAYHOOKS_API_URL` are both unset) the simulator is the API. The environment always wins; a file that is
 * broken or names a simulator that has stopped is ignored with a warning that says why, so a stale secret is
 * never used. One info line says when the session is used.
 *
 * @example
 * const env = await withSimulatorSession(readEnv('serve'), logger);
 */
export async function withSimulatorSession(env: ServiceEnv, logger: Logger, dir: string = DEFAULT_SESSION_DIR): Promise<ServiceEnv> {
  if (env.PAYHOOKS_WEBHOOK_SECRET?.length) return env;
  const live = await liveSession(logger, dir, 'its secret can no longer verify anything', 'PAYHOOKS_WEBHOOK_SECRET');
  if (!live) return env;
  const { session, secret, file } = live;
  const accounts = sessionAccountEntries(session);
  if (accounts.length > 1) {
    // Only the caller can take several organizations as accounts (withSimulatorSessionAccounts); taking the first
    // one's secret here would leave the others' deliveries refused, so say so instead.
    logger.warn(
      `not using the simulator session from ${file}: it runs ${accounts.length} organizations (${accounts.map((a) => a.id).join(', ')}), and serve takes them as its accounts only when its configuration file names none. Leave accounts out of the configuration file, run payhooks simulate without --accounts, or set PAYHOOKS_WEBHOOK_SECRET.`,
    );
    return env;
  }
  const apiFromSession = env.PAYHOOKS_API_KEY === undefined && env.PAYHOOKS_API_URL === undefined;
  logger.info(
    apiFromSession
      ? `using the simulator session from ${file}: secret and API at ${session.url}; set PAYHOOKS_WEBHOOK_SECRET to override`
      : `using the simulator session from ${file}: secret of endpoint ${session.endpointId} (the API from PAYHOOKS_API_KEY / PAYHOOKS_API_URL); set PAYHOOKS_WEBHOOK_SECRET to override`,
  );
  warnIfNotForwardedHere([{ id: undefined, forwardTo: session.forwardTo }], env, logger);
  return {
    ...env,
    PAYHOOKS_WEBHOOK_SECRET: [secret],
    ...(apiFromSession ? { PAYHOOKS_API_KEY: session.apiKey, PAYHOOKS_API_URL: session.url } : {}),
  };
}

/**
 * The accounts of a running simulator's session, `{ id, apiKey, apiUrl, secrets }` each with its endpoint's
 * current secret (asked with that organization's own key), for serve to receive on `/webhooks/<id>` for each:
 * undefined (with a warning that says why) when there is no session, it is broken, or its simulator stopped.
 * A session of one organization gives one account, `default`.
 *
 * @example
 * const accounts = await simulatorSessionAccounts(logger); // [{ id: 'acct_1', apiKey, apiUrl, secrets: [current] }, …]
 */
export async function simulatorSessionAccounts(
  logger: SessionLog,
  dir: string = DEFAULT_SESSION_DIR,
): Promise<SessionServiceAccount[] | undefined> {
  const file = displayPath(sessionFilePath(dir));
  const session = await readSessionOrWarn(logger, dir);
  if (!session) return undefined;
  const probe = await probeSessionAccounts(session);
  if (!probe.live) {
    logger.warn(
      `not using the simulator session from ${file}: ${probe.reason}, so its secrets can no longer verify anything. Run payhooks simulate --forward-to URL again.`,
    );
    return undefined;
  }
  logger.info(
    `using the simulator session from ${file}: ${probe.accounts.length} account${probe.accounts.length === 1 ? '' : 's'} (${probe.accounts.map((a) => a.id).join(', ')}), secrets and API at ${session.url}`,
  );
  return probe.accounts;
}

/** What `serve` takes from a simulator session: its environment, and one account per organization when there are several. */
export interface SimulatorSessionSetup {
  env: ServiceEnv;
  /** Empty for a session of one organization (its secret and API are in `env`, as before accounts existed). */
  accounts: SessionServiceAccount[];
}

/**
 * {@link withSimulatorSession} for a serve whose configuration names no accounts: a session of several
 * organizations (`simulate --accounts N`) becomes one account each, received at `/webhooks/<id>` and verified with
 * that organization's current secret, its handlers reading the simulator with its key; a session of one
 * organization completes the environment as before (`/webhooks`, no path change). The environment's secret wins
 * over both.
 *
 * @example
 * const { env, accounts } = await withSimulatorSessionAccounts(readEnv('serve'), logger);
 */
export async function withSimulatorSessionAccounts(
  env: ServiceEnv,
  logger: Logger,
  dir: string = DEFAULT_SESSION_DIR,
): Promise<SimulatorSessionSetup> {
  if (env.PAYHOOKS_WEBHOOK_SECRET?.length) return { env, accounts: [] };
  // A quiet look first: a broken file is reported once, by whichever reader below takes it.
  const peek = await readSimulatorSession(dir).catch(() => undefined);
  if (!peek || sessionAccountEntries(peek).length < 2) return { env: await withSimulatorSession(env, logger, dir), accounts: [] };
  const accounts = await simulatorSessionAccounts(logger, dir);
  if (accounts) warnIfNotForwardedHere(sessionAccountEntries(peek), env, logger);
  return { env, accounts: accounts ?? [] };
}

/** Where {@link withSimulatorSessionApi} reports what it did: a pino logger, or a command's stderr. */
export interface SessionLog {
  info(message: string): void;
  warn(message: string): void;
}

/**
 * The API part of {@link withSimulatorSession}, for the commands that read the service's API but receive no
 * deliveries (`verify`, `backfill`): with `PAYHOOKS_API_KEY` and `PAYHOOKS_API_URL` both unset and a live simulator
 * session in `dir`, the simulator is the API, as it is for `serve` beside it. The same file, the same checks (a
 * broken file or a stopped simulator is ignored with a warning) and one line that says so. With several
 * organizations (`simulate --accounts`), `account`'s key (default: the first organization's).
 *
 * @example
 * const env = await withSimulatorSessionApi(ctx.env('verify'), log);
 */
export async function withSimulatorSessionApi<E extends { PAYHOOKS_API_KEY?: string | undefined; PAYHOOKS_API_URL?: string | undefined }>(
  env: E,
  logger: SessionLog,
  dir: string = DEFAULT_SESSION_DIR,
  account?: string,
): Promise<E> {
  if (env.PAYHOOKS_API_KEY !== undefined || env.PAYHOOKS_API_URL !== undefined) return env;
  const live = await liveSession(logger, dir, 'it is not the API any more', 'PAYHOOKS_API_KEY and PAYHOOKS_API_URL');
  if (!live) return env;
  // Several organizations: the one asked for, else the first; each key reads only its own organization's data.
  const accounts = sessionAccountEntries(live.session);
  const chosen = account === undefined ? accounts[0]! : accounts.find((entry) => entry.id === account);
  if (!chosen) {
    logger.warn(
      `not using the simulator session from ${live.file}: it has no account ${account} (it lists ${accounts.map((a) => a.id).join(', ')}).`,
    );
    return env;
  }
  const whose = accounts.length > 1 ? ` as account ${chosen.id} (of ${accounts.map((a) => a.id).join(', ')})` : '';
  logger.info(
    `using the simulator session from ${live.file}: the API at ${live.session.url}${whose}; set PAYHOOKS_API_KEY and PAYHOOKS_API_URL to override`,
  );
  return { ...env, PAYHOOKS_API_KEY: chosen.apiKey, PAYHOOKS_API_URL: live.session.url };
}

/**
 * The session in `dir` when its simulator answers, with the endpoint's current secret; undefined (and a warning
 * that says why, naming what to set instead) when the file is broken or its simulator has stopped.
 */
async function liveSession(
  logger: SessionLog,
  dir: string,
  staleMeans: string,
  override: string,
): Promise<{ session: SimulatorSession; secret: string; file: string } | undefined> {
  const file = displayPath(sessionFilePath(dir));
  const session = await readSessionOrWarn(logger, dir);
  if (!session) return undefined;
  const probe = await probeSimulatorSession(session);
  if (!probe.live) {
    logger.warn(
      `not using the simulator session from ${file}: ${probe.reason}, so ${staleMeans}. Run payhooks simulate --forward-to URL again, or set ${override}.`,
    );
    return undefined;
  }
  return { session, secret: probe.secret, file };
}

/** The session file in `dir`; undefined when there is none, or (with a warning) when it is not a session. */
async function readSessionOrWarn(logger: SessionLog, dir: string): Promise<SimulatorSession | undefined> {
  try {
    return await readSimulatorSession(dir);
  } catch (err) {
    if (!(err instanceof SimulatorSessionError)) throw err;
    logger.warn(`ignoring the simulator session: ${err.message.replace(/^payhooks: /, '')}`);
    return undefined;
  }
}

// A simulator forwarding to another port or path than this serve listens on delivers nothing here; say so now
// rather than leave the user waiting for events that go elsewhere. An account's path is /webhooks/<its id>.
function warnIfNotForwardedHere(
  targets: readonly { id: string | undefined; forwardTo: string }[],
  env: ServiceEnv,
  logger: Pick<Logger, 'warn'>,
): void {
  for (const { id, forwardTo } of targets) {
    const target = new URL(forwardTo);
    const local = ['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname);
    const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
    if (!local || env.PORT === 0) continue;
    const path = id === undefined ? '/webhooks' : `/webhooks/${id}`;
    if (port !== env.PORT || target.pathname !== path) {
      logger.warn(
        `the simulator forwards ${id === undefined ? '' : `account ${id}'s deliveries `}to ${forwardTo}, but serve receives ${id === undefined ? '' : 'them '}on port ${env.PORT} at ${path}: deliveries will not arrive here${port !== env.PORT ? ` (start serve with PORT=${port})` : ''}`,
      );
      return;
    }
  }
}
