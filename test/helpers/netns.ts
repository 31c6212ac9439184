// Hosts as Linux network namespaces, each joined to this one by a veth pair on a /30 of its own: a process started
// in one has its own loopback and reaches this namespace only through its veth address. Each test makes and
// removes its own (root only; where `ip netns` cannot run the tests fall back to loopback ports and say so).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';

const IP = '/usr/sbin/ip';

/** One namespaced host. */
export interface NamespacedHost {
  readonly namespace: string;
  /** Its address, as this namespace reaches it. */
  readonly address: string;
  /** This namespace's address on the link, as the host reaches it. */
  readonly gateway: string;
  /** The command and arguments that run `command args…` inside the namespace. */
  exec(command: string, args: readonly string[]): [string, string[]];
  /**
   * Takes the host's link down (this namespace's end of the veth pair), or brings it back up: a partition. Packets
   * either way are dropped while it is down; open connections are not closed, and carry on when it comes back up.
   */
  setLink(up: boolean): void;
  remove(): void;
}

const ip = (args: readonly string[]) => execFileSync(IP, args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** Why namespaced hosts cannot be made here, or undefined when they can (tried once, with a namespace made and removed). */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  if (!existsSync(IP)) return `no ${IP} (apt-get install iproute2)`;
  const probe = `phprobe${process.pid}`;
  try {
    ip(['netns', 'add', probe]);
    ip(['netns', 'del', probe]);
    return undefined;
  } catch (error) {
    return `ip netns fails: ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}`;
  }
}

/**
 * Makes host number `index` (0 to 62) of this test process: namespace `ph<pid>n<index>`, link 10.249.<pid % 250>.<4·index>/30
 * (this side .1, the namespace .2), the namespace's loopback up.
 */
export function makeNamespacedHost(index: number): NamespacedHost {
  const namespace = `ph${process.pid}n${index}`;
  // Interface names have at most 15 characters.
  const outside = `ph${process.pid % 100_000}v${index}`;
  const inside = `ph${process.pid % 100_000}w${index}`;
  const subnet = `10.249.${process.pid % 250}`;
  const gateway = `${subnet}.${4 * index + 1}`;
  const address = `${subnet}.${4 * index + 2}`;
  const inNs = (args: readonly string[]) => ip(['netns', 'exec', namespace, IP, ...args]);
  const remove = () => {
    for (const args of [
      ['netns', 'del', namespace],
      ['link', 'del', outside],
    ]) {
      try {
        ip(args);
      } catch {
        // already gone (deleting the namespace takes its end of the pair, and so the pair)
      }
    }
  };
  try {
    ip(['netns', 'add', namespace]);
    ip(['link', 'add', outside, 'type', 'veth', 'peer', 'name', inside]);
    ip(['link', 'set', inside, 'netns', namespace]);
    ip(['addr', 'add', `${gateway}/30`, 'dev', outside]);
    ip(['link', 'set', outside, 'up']);
    inNs(['addr', 'add', `${address}/30`, 'dev', inside]);
    inNs(['link', 'set', inside, 'up']);
    inNs(['link', 'set', 'lo', 'up']);
  } catch (error) {
    remove();
    throw error;
  }
  return {
    namespace,
    address,
    gateway,
    exec: (command, args) => [IP, ['netns', 'exec', namespace, command, ...args]],
    setLink: (up) => ip(['link', 'set', outside, up ? 'up' : 'down']),
    remove,
  };
}

/**
 * A TCP forwarder listening on `listenHost` (a namespaced host's gateway: the only address of this namespace the host
 * reaches) to `target` (the test's PostgreSQL server on loopback), so that processes in the host reach the database
 * through their link, and lose it when the link goes down.
 */
export async function forwardTo(listenHost: string, target: URL): Promise<Server> {
  const server = createServer((inbound) => {
    const outbound = connect(Number(target.port || 5432), target.hostname);
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, listenHost, resolve));
  return server;
}
