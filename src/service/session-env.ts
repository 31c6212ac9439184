import type { Logger } from 'pino';
import type { ServiceEnv } from './service-defaults.js';
import {
  DEFAULT_SESSION_DIR,
  displayPath,
  probeSimulatorSession,
  readSimulatorSession,
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
  const apiFromSession = env.PAYHOOKS_API_KEY === undefined && env.PAYHOOKS_API_URL === undefined;
  logger.info(
    apiFromSession
      ? `using the simulator session from ${file}: secret and API at ${session.url}; set PAYHOOKS_WEBHOOK_SECRET to override`
      : `using the simulator session from ${file}: secret of endpoint ${session.endpointId} (the API from PAYHOOKS_API_KEY / PAYHOOKS_API_URL); set PAYHOOKS_WEBHOOK_SECRET to override`,
  );
  warnIfNotForwardedHere(session.forwardTo, env, logger);
  return {
    ...env,
    PAYHOOKS_WEBHOOK_SECRET: [secret],
    ...(apiFromSession ? { PAYHOOKS_API_KEY: session.apiKey, PAYHOOKS_API_URL: session.url } : {}),
  };
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
 * broken file or a stopped simulator is ignored with a warning) and one line that says so.
 *
 * @example
 * const env = await withSimulatorSessionApi(ctx.env('verify'), log);
 */
export async function withSimulatorSessionApi<E extends { PAYHOOKS_API_KEY?: string | undefined; PAYHOOKS_API_URL?: string | undefined }>(
  env: E,
  logger: SessionLog,
  dir: string = DEFAULT_SESSION_DIR,
): Promise<E> {
  if (env.PAYHOOKS_API_KEY !== undefined || env.PAYHOOKS_API_URL !== undefined) return env;
  const live = await liveSession(logger, dir, 'it is not the API any more', 'PAYHOOKS_API_KEY and PAYHOOKS_API_URL');
  if (!live) return env;
  logger.info(
    `using the simulator session from ${live.file}: the API at ${live.session.url}; set PAYHOOKS_API_KEY and PAYHOOKS_API_URL to override`,
  );
  return { ...env, PAYHOOKS_API_KEY: live.session.apiKey, PAYHOOKS_API_URL: live.session.url };
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
  let session: SimulatorSession | undefined;
  try {
    session = await readSimulatorSession(dir);
  } catch (err) {
    if (!(err instanceof SimulatorSessionError)) throw err;
    logger.warn(`ignoring the simulator session: ${err.message.replace(/^payhooks: /, '')}`);
    return undefined;
  }
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

// A simulator forwarding to another port or path than this serve listens on delivers nothing here; say so now
// rather than leave the user waiting for events that go elsewhere.
function warnIfNotForwardedHere(forwardTo: string, env: ServiceEnv, logger: Logger): void {
  const target = new URL(forwardTo);
  const local = ['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname);
  const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
  if (!local || env.PORT === 0) return;
  if (port !== env.PORT || target.pathname !== '/webhooks') {
    logger.warn(
      `the simulator forwards to ${forwardTo}, but serve receives on port ${env.PORT} at /webhooks: deliveries will not arrive here${port !== env.PORT ? ` (start serve with PORT=${port})` : ''}`,
    );
  }
}
