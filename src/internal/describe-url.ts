/**
 * A URL as logs and errors may show it: scheme, host and path, without credentials or query (either may hold a
 * secret). Spelt out rather than `origin`, which is "null" for schemes such as amqp:.
 *
 * @example
 * describeUrl('amqp://guest:guest@127.0.0.1:5672') // 'amqp://127.0.0.1:5672/'
 */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname || '/'}`;
  } catch {
    return '(an invalid URL)';
  }
}

/**
 * A connection string as it may be shown: scheme, user, host, port and database, never the password or the
 * query (which may carry one).
 *
 * @example
 * describeDatabaseUrl('postgres://app:hunter2@db:5432/billing?sslmode=require') // 'postgres://app@db:5432/billing'
 */
export function describeDatabaseUrl(url: string): string {
  // Several hosts (libpq's `postgres://u@h1:5432,h2:5432/db`), which the URL parser refuses: the list as it is.
  const multiHost = /^(postgres(?:ql)?:\/\/)(?:([^:@/?#]*)(?::[^@/?#]*)?@)?([^@/?#]*,[^@/?#]*)(?=[/?#]|$)(\/[^?#]*)?/i.exec(url);
  if (multiHost) {
    const [, scheme, user, hosts, path] = multiHost;
    return `${scheme}${user ? `${decodeURIComponent(user)}@` : ''}${hosts}${path && path !== '/' ? path : ''}`;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'DATABASE_URL (not shown: it is not a URL)';
  }
  const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : '';
  return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
}
