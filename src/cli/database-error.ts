import { PayhooksError } from '../errors.js';
import { describeDatabaseUrl } from '../internal/describe-url.js';
import { connectionPassword, parseConnectionHosts } from '../store/connection-hosts.js';
import { describeError, scrubbed } from './doctor-checks.js';

/** Error codes of a server that cannot be reached, a database that does not exist and a refused login. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ECONNRESET',
  '3D000',
  '28P01',
  '28000',
]);

/** The port a refused or failed socket was for (Node puts it on the error), if any. */
function portOf(err: unknown): number | undefined {
  if (err instanceof AggregateError && err.errors.length > 0) return portOf(err.errors[0]);
  const port = (err as { port?: unknown } | null)?.port;
  return typeof port === 'number' ? port : undefined;
}

function codeOf(err: unknown): string | undefined {
  if (err instanceof AggregateError && err.errors.length > 0 && !(err as { code?: unknown }).code) return codeOf(err.errors[0]);
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * A failure to reach the database said with what to check: DATABASE_URL (shown without its password) and `payhooks
 * doctor`. Other errors (a migration refused, a statement failing) are returned as they are.
 */
export function explainedDatabaseError(url: string, err: unknown): unknown {
  const code = codeOf(err);
  const timedOut =
    err instanceof Error && /timeout exceeded when trying to connect|Connection terminated due to connection timeout/i.test(err.message);
  if (err instanceof PayhooksError || (!timedOut && (code === undefined || !(CONNECTION_CODES.has(code) || code.startsWith('08')))))
    return err;
  const password = connectionPassword(url);
  let ports = [5432];
  try {
    ports = parseConnectionHosts(url).hosts.map((host) => host.port);
  } catch {
    // not readable: the default port
  }
  // A socket to another port (a broker, the API) is not the database's to explain; any of its hosts' ports is.
  const failedPort = portOf(err);
  if (failedPort !== undefined && !ports.includes(failedPort)) return err;
  const reason = scrubbed(describeError(err), [password, url]);
  return new PayhooksError(
    `cannot use the PostgreSQL database of DATABASE_URL (${describeDatabaseUrl(url)}): ${reason}. ` +
      "Check DATABASE_URL's host, port, user, password and database name; `payhooks doctor` checks them.",
    { cause: err },
  );
}
