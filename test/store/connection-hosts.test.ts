import { describe, expect, it } from 'vitest';
import { describeDatabaseUrl } from '../../src/internal/describe-url.js';
import { explainedDatabaseError } from '../../src/cli/database-error.js';
import { connectionPassword, parseConnectionHosts } from '../../src/store/connection-hosts.js';
import { HostRotation } from '../../src/store/failover-client.js';

describe('parseConnectionHosts (libpq host lists)', () => {
  it('reads hosts and ports as lists from a URL, defaulting a missing port to 5432, and keeps the rest for node-postgres', () => {
    const read = parseConnectionHosts(
      'postgres://app:s%3Acret@db1:5433,db2,[::1]:6000/payhooks?target_session_attrs=read-write&sslmode=disable',
    );
    expect(read.hosts).toEqual([
      { host: 'db1', port: 5433 },
      { host: 'db2', port: 5432 },
      { host: '::1', port: 6000 },
    ]);
    expect(read.targetSessionAttrs).toBe('read-write');
    expect(read.connectionString).toBe('postgres://app:s%3Acret@db1:5433/payhooks?sslmode=disable');
  });

  it('defaults to read-write with several hosts and to any with one; primary reads as read-write', () => {
    expect(parseConnectionHosts('postgres://db1,db2/x').targetSessionAttrs).toBe('read-write');
    expect(parseConnectionHosts('postgres://db1/x').targetSessionAttrs).toBe('any');
    expect(parseConnectionHosts('postgres://db1,db2/x?target_session_attrs=any').targetSessionAttrs).toBe('any');
    expect(parseConnectionHosts('postgres://db1/x?target_session_attrs=primary').targetSessionAttrs).toBe('read-write');
  });

  it("passes node-postgres' socket: form through as it is", () => {
    expect(parseConnectionHosts('socket:/var/run/postgresql?db=payhooks').connectionString).toBe('socket:/var/run/postgresql?db=payhooks');
  });

  it('gives a URL of one host back unchanged', () => {
    const url = 'postgresql://me:pw@127.0.0.1:5432/test?application_name=x';
    expect(parseConnectionHosts(url)).toEqual({
      hosts: [{ host: '127.0.0.1', port: 5432 }],
      targetSessionAttrs: 'any',
      connectionString: url,
    });
  });

  it('reads host and port lists from the query, pairing one port with every host', () => {
    expect(parseConnectionHosts('postgres:///db?host=a,b&port=7000').hosts).toEqual([
      { host: 'a', port: 7000 },
      { host: 'b', port: 7000 },
    ]);
    expect(parseConnectionHosts('postgres://u@x/db?host=a,b&port=7000,7001').connectionString).toBe('postgres://u@a:7000/db');
  });

  it('reads the keyword form, quoted values included, into a URL', () => {
    const read = parseConnectionHosts("host=h1,h2 port=5432,5433 dbname=pay user=app password='it\\'s x' sslmode=disable");
    expect(read.hosts).toEqual([
      { host: 'h1', port: 5432 },
      { host: 'h2', port: 5433 },
    ]);
    expect(read.targetSessionAttrs).toBe('read-write');
    const url = new URL(read.connectionString);
    expect([url.hostname, url.port, url.pathname, decodeURIComponent(url.username), url.searchParams.get('sslmode')]).toEqual([
      'h1',
      '5432',
      '/pay',
      'app',
      'disable',
    ]);
    expect(decodeURIComponent(url.password)).toBe("it's x");
  });

  it('refuses what it cannot use, saying why and never showing the password', () => {
    const refusals = [
      ['postgres://u:hunter2@db1,,db2/x', /empty host/],
      ['postgres://u:hunter2@db1:99999,db2/x', /invalid port "99999"/],
      ['postgres://u:hunter2@db1,db2/x?target_session_attrs=standby', /payhooks writes, so use read-write/],
      ['postgres://u:hunter2@x/db?host=a,b,c&port=1,2', /3 hosts but 2 ports/],
      ['host=a port=5432 password=hunter2 !!', /cannot read from position/],
      ['mysql://u:hunter2@db/x', /neither a postgres:\/\/ URL nor libpq keywords/],
    ] as const;
    for (const [text, message] of refusals) {
      let thrown: unknown;
      try {
        parseConnectionHosts(text);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, text).toBeInstanceOf(TypeError);
      expect((thrown as Error).message).toMatch(message);
      expect((thrown as Error).message).not.toContain('hunter2');
    }
  });

  it('describes a URL of several hosts without its password or parameters', () => {
    expect(describeDatabaseUrl('postgres://app:hunter2@db1:5432,db2:5433/payhooks?target_session_attrs=read-write')).toBe(
      'postgres://app@db1:5432,db2:5433/payhooks',
    );
    // A comma in the password of one host is not a host list.
    expect(describeDatabaseUrl('postgres://app:hun,ter2@db1:5432/payhooks')).toBe('postgres://app@db1:5432/payhooks');
  });

  it('finds the password of any form, so that messages can leave it out', () => {
    expect(connectionPassword('postgres://app:hun%40ter2@db1:5432,db2:5433/payhooks')).toBe('hun@ter2');
    expect(connectionPassword("host=a,b password='hunter 2' dbname=x")).toBe('hunter 2');
    expect(connectionPassword('postgres://app@db1,db2/payhooks')).toBeUndefined();
    expect(connectionPassword('not a connection string')).toBeUndefined();
  });

  it("explains a refused connection to any of the hosts as the database's, without the password", () => {
    const url = 'postgres://app:hunter2@127.0.0.1:6001,127.0.0.1:6002/payhooks';
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6002 (password hunter2)'), {
      code: 'ECONNREFUSED',
      port: 6002,
    });
    const explained = explainedDatabaseError(url, refused) as Error;
    expect(explained.message).toMatch(
      /cannot use the PostgreSQL database of DATABASE_URL \(postgres:\/\/app@127\.0\.0\.1:6001,127\.0\.0\.1:6002\/payhooks\)/,
    );
    expect(explained.message).not.toContain('hunter2');
    // A socket to a port of none of the hosts (a broker) is not the database's.
    const other = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5672'), { code: 'ECONNREFUSED', port: 5672 });
    expect(explainedDatabaseError(url, other)).toBe(other);
  });

  it('rotates to the next host once however many connections to the failed one report it, and comes round again', () => {
    const rotation = new HostRotation([
      { host: 'db1', port: 5432 },
      { host: 'db2', port: 5432 },
    ]);
    expect(rotation.current()).toEqual({ host: 'db1', port: 5432 });
    // Ten pooled connections to db1 fail at once: db2 is tried next, not db1 again after an even count.
    for (let i = 0; i < 10; i++) rotation.failed({ host: 'db1', port: 5432 });
    expect(rotation.current()).toEqual({ host: 'db2', port: 5432 });
    rotation.failed({ host: 'db1', port: 5432 });
    expect(rotation.current()).toEqual({ host: 'db2', port: 5432 });
    rotation.failed({ host: 'db2', port: 5432 });
    expect(rotation.current()).toEqual({ host: 'db1', port: 5432 });
    expect(() => new HostRotation([])).toThrow(TypeError);
  });
});
