import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A loopback TCP proxy that can take a real server away from the code under test, and give it back. */
export interface TcpProxy {
  readonly port: number;
  /** Drops every open connection and refuses new ones. */
  cut(): Promise<void>;
  /** Accepts connections again, on the same port. */
  restore(): Promise<void>;
  /** Keeps connections open but holds back every byte both ways: the server seems to hang. */
  stall(): void;
  /** Delivers what was held back and forwards again. */
  resume(): void;
  /**
   * A partition: every byte of every connection, open or new, is dropped, and no connection is closed. Until
   * {@link TcpProxy.heal}, the server seems to have vanished without a word.
   */
  blackhole(): void;
  /** The partition ends for new connections; those opened before stay silent forever, as after a real one. */
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const held: { to: Socket; chunk: Buffer }[] = [];
  const silenced = new WeakSet<Socket>();
  let stalled = false;
  let partitioned = false;
  let server: Server | undefined;
  let port = 0;

  const forward = (from: Socket, to: Socket) => {
    if (partitioned) silenced.add(from);
    from.on('data', (chunk: Buffer) => {
      if (silenced.has(from)) return;
      if (stalled) held.push({ to, chunk });
      else to.write(chunk);
    });
    from.on('close', () => to.destroy());
  };

  const open = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(targetPort, targetHost);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => undefined);
        }
        forward(client, upstream);
        forward(upstream, client);
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as AddressInfo).port;
        resolve();
      });
    });
  const shut = () =>
    new Promise<void>((resolve) => {
      held.length = 0;
      for (const socket of sockets) socket.destroy();
      if (!server) return resolve();
      server.close(() => resolve());
      server = undefined;
    });

  await open();
  return {
    get port() {
      return port;
    },
    cut: shut,
    restore: open,
    stall() {
      stalled = true;
    },
    resume() {
      stalled = false;
      for (const { to, chunk } of held.splice(0)) if (!to.destroyed) to.write(chunk);
    },
    blackhole() {
      partitioned = true;
      for (const socket of sockets) silenced.add(socket);
    },
    heal() {
      partitioned = false;
    },
    close: shut,
  };
}
