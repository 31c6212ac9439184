/** One server of a connection string's host list. */
export interface DatabaseHost {
  host: string;
  port: number;
}

/**
 * Which server of the list a connection may use, as libpq's `target_session_attrs` says it: `read-write` (one that
 * accepts writes: the primary) or `any` (the first that answers).
 */
export type TargetSessionAttrs = 'read-write' | 'any';

/** A connection string read as libpq reads it, split into what node-postgres understands and the host list it does not. */
export interface ConnectionHosts {
  /** The servers to try, in the order given. Never empty. */
  hosts: readonly DatabaseHost[];
  /** `read-write` when the string says so or lists several hosts and says nothing (payhooks always writes). */
  targetSessionAttrs: TargetSessionAttrs;
  /**
   * A `postgres://` URL that node-postgres parses: the first host, and everything else of the original (user,
   * password, database, other parameters) but `target_session_attrs`, which node-postgres does not know.
   */
  connectionString: string;
}

const DEFAULT_PORT = 5432;

/**
 * Reads a PostgreSQL connection string the way libpq does where node-postgres does not: several hosts and ports as
 * lists, in the URL form (`postgres://u:p@h1:5432,h2:5433/db?target_session_attrs=read-write`) or the keyword form
 * (`host=h1,h2 port=5432,5433 dbname=db target_session_attrs=read-write`). A URL of one host comes back as it was.
 *
 * Unlike libpq, whose default is `any`, several hosts default to `read-write`: payhooks writes on every path, and a
 * standby would refuse each write. `primary` is read as `read-write`; `read-only`, `standby` and `prefer-standby`
 * are refused, for the same reason. Throws a `TypeError` that says what is wrong with the string (never its password).
 *
 * @example
 * parseConnectionHosts('postgres://app@db1,db2:5433/payhooks').hosts // [{ host: 'db1', port: 5432 }, { host: 'db2', port: 5433 }]
 */
export function parseConnectionHosts(connection: string): ConnectionHosts {
  const text = connection.trim();
  if (/^postgres(ql)?:\/\//i.test(text)) return parseUrlForm(text);
  if (/^\s*[a-z_]+\s*=/i.test(text)) return parseKeywordForm(text);
  // node-postgres' own form for a Unix socket (`socket:/var/run/postgresql?db=payhooks`): one server, as it was.
  if (/^socket:/i.test(text))
    return { hosts: [{ host: 'localhost', port: DEFAULT_PORT }], targetSessionAttrs: 'any', connectionString: text };
  throw new TypeError('the database connection string is neither a postgres:// URL nor libpq keywords (host=… dbname=…) nor socket:/path');
}

function parseUrlForm(url: string): ConnectionHosts {
  const schemeEnd = url.indexOf('://') + 3;
  const rest = url.slice(schemeEnd);
  // The authority ends at the path, the query or the fragment; a password holding one of these must be percent-encoded, as in any URL.
  const authorityEnd = rest.search(/[/?#]/);
  const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd);
  const tail = authorityEnd === -1 ? '' : rest.slice(authorityEnd);
  const at = authority.lastIndexOf('@');
  const userinfo = at === -1 ? '' : authority.slice(0, at + 1);
  const hostList = authority.slice(at + 1);
  const queryStart = tail.indexOf('?');
  const path = queryStart === -1 ? tail : tail.slice(0, queryStart);
  const params = new URLSearchParams(queryStart === -1 ? '' : tail.slice(queryStart + 1).replace(/#.*$/, ''));
  // No host at all (`postgres:///db`) is libpq's local default, unless the query names the hosts.
  let hosts = hostList === '' ? [{ host: 'localhost', port: DEFAULT_PORT }] : hostList.split(',').map(parseHostPort);
  // libpq lets the query carry the lists too (`?host=h1,h2&port=…`); they replace the authority's.
  const queryHosts = params.get('host');
  const queryPorts = params.get('port');
  if (queryHosts !== null || queryPorts !== null) {
    hosts = zipHosts(queryHosts ?? hosts.map((h) => h.host).join(','), queryPorts ?? '');
    params.delete('host');
    params.delete('port');
  }
  const targetSessionAttrs = readTargetSessionAttrs(params.get('target_session_attrs'), hosts.length);
  params.delete('target_session_attrs');
  if (hosts.length === 1 && queryHosts === null && queryPorts === null && !/target_session_attrs/.test(tail)) {
    return { hosts, targetSessionAttrs, connectionString: url };
  }
  const query = params.toString();
  const first = hosts[0] as DatabaseHost;
  const connectionString = `${url.slice(0, schemeEnd)}${userinfo}${formatHost(first)}${path}${query ? `?${query}` : ''}`;
  return { hosts, targetSessionAttrs, connectionString };
}

function parseHostPort(entry: string): DatabaseHost {
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(entry);
  if (bracketed) return { host: bracketed[1] as string, port: readPort(bracketed[2] ?? '') };
  const colon = entry.lastIndexOf(':');
  const host = decodeURIComponent(colon === -1 ? entry : entry.slice(0, colon));
  if (host === '') throw new TypeError('the database connection string lists an empty host: name each host (h1:5432,h2:5432)');
  return { host, port: readPort(colon === -1 ? '' : entry.slice(colon + 1)) };
}

function readPort(text: string): number {
  if (text === '') return DEFAULT_PORT;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65_535) {
    throw new TypeError(`the database connection string has an invalid port ${JSON.stringify(text)}: use a number from 1 to 65535`);
  }
  return port;
}

/** libpq's pairing of a host list with a port list: one port for every host, or as many ports as hosts. */
function zipHosts(hostList: string, portList: string): DatabaseHost[] {
  const names = hostList.split(',').map((name) => name.trim());
  if (names.some((name) => name === '')) {
    throw new TypeError('the database connection string lists an empty host: name each host (host=h1,h2)');
  }
  const ports = portList === '' ? [] : portList.split(',').map((port) => readPort(port.trim()));
  if (ports.length > 1 && ports.length !== names.length) {
    throw new TypeError(
      `the database connection string lists ${names.length} hosts but ${ports.length} ports: give one port, or one for each host`,
    );
  }
  return names.map((host, i) => ({ host, port: ports.length === 0 ? DEFAULT_PORT : (ports[ports.length === 1 ? 0 : i] as number) }));
}

function readTargetSessionAttrs(value: string | null, hostCount: number): TargetSessionAttrs {
  if (value === null) return hostCount > 1 ? 'read-write' : 'any';
  if (value === 'read-write' || value === 'primary') return 'read-write';
  if (value === 'any') return 'any';
  throw new TypeError(
    `target_session_attrs=${JSON.stringify(value)} is not supported: payhooks writes, so use read-write (the default with several hosts) or any`,
  );
}

function formatHost({ host, port }: DatabaseHost): string {
  return `${host.includes(':') ? `[${host}]` : encodeURIComponent(host)}:${port}`;
}

/** libpq's keyword names that have another name in a URL. */
const URL_PARTS = new Set(['host', 'port', 'user', 'password', 'dbname', 'target_session_attrs']);

function parseKeywordForm(text: string): ConnectionHosts {
  const values = readKeywords(text);
  const hosts = zipHosts(values.get('host') ?? 'localhost', values.get('port') ?? '');
  const targetSessionAttrs = readTargetSessionAttrs(values.get('target_session_attrs') ?? null, hosts.length);
  const user = values.get('user');
  const password = values.get('password');
  const userinfo =
    user === undefined && password === undefined
      ? ''
      : `${encodeURIComponent(user ?? '')}${password === undefined ? '' : `:${encodeURIComponent(password)}`}@`;
  const database = values.get('dbname');
  const params = new URLSearchParams();
  for (const [key, value] of values) if (!URL_PARTS.has(key)) params.set(key, value);
  const query = params.toString();
  const connectionString = `postgres://${userinfo}${formatHost(hosts[0] as DatabaseHost)}/${database === undefined ? '' : encodeURIComponent(database)}${query ? `?${query}` : ''}`;
  return { hosts, targetSessionAttrs, connectionString };
}

/** `key=value` pairs separated by spaces; a value may be single-quoted, with `\'` and `\\` inside (libpq's rules). */
function readKeywords(text: string): Map<string, string> {
  const values = new Map<string, string>();
  const pair = /\s*([a-z_]+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|([^\s']*))/giy;
  let match: RegExpExecArray | null;
  let end = 0;
  for (;;) {
    match = pair.exec(text);
    if (match === null) break;
    end = pair.lastIndex;
    const quoted = match[2];
    values.set((match[1] as string).toLowerCase(), quoted === undefined ? (match[3] as string) : quoted.replace(/\\(.)/g, '$1'));
  }
  if (text.slice(end).trim() !== '') {
    throw new TypeError(
      `the database connection string has keywords it cannot read from position ${end}: write key=value pairs separated by spaces`,
    );
  }
  return values;
}

/**
 * The password a connection string carries (URL or keyword form, one host or several), to keep it out of messages;
 * undefined when it has none or cannot be read.
 *
 * @example
 * connectionPassword('postgres://app:hunter2@db1,db2/payhooks') // 'hunter2'
 */
export function connectionPassword(connection: string): string | undefined {
  try {
    const password = new URL(parseConnectionHosts(connection).connectionString).password;
    return password ? decodeURIComponent(password) : undefined;
  } catch {
    return undefined;
  }
}
