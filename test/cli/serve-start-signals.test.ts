// Signals while `serve` starts: the first is kept (the start goes on, then the service stops), a second stops the
// process at once. The start is held up by a "database" on loopback that accepts the connection and never answers, so
// the process is certainly still starting when the signals come.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, spawnCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

describe('payhooks serve signalled while it starts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-start-signals-'));
  const sockets = new Set<Socket>();
  let silent: Server;
  let port = 0;
  beforeAll(async () => {
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    port = (silent.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the first SIGTERM and stops at the second', { timeout: 60_000 }, async () => {
    const env = {
      DATABASE_URL: `postgres://payhooks@127.0.0.1:${port}/payhooks`,
      PORT: '0',
      HOST: '127.0.0.1',
      PAYHOOKS_WEBHOOK_SECRET: 'start-signals-secret',
    };
    const serve = spawnCli(['serve', '--role', 'receiver'], env, dir);
    const exited = collect(serve, 50_000);
    let signal: NodeJS.Signals | null = null;
    serve.on('exit', (_code, sig) => (signal = sig));
    // Connected to the silent server: the start waits for its answer (up to the 5 s connection timeout).
    await waitFor(() => sockets.size > 0, 'serve to connect to the database', 30_000);
    serve.kill('SIGTERM');
    // Kept, not its default action: the process is still there after the first signal has been handled.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(serve.exitCode).toBeNull();
    expect(signal).toBeNull();
    serve.kill('SIGTERM');
    const { code, stdout, stderr } = await exited;
    expect(code, `stdout:\n${stdout}\nstderr:\n${stderr}`).toBeNull();
    expect(signal).toBe('SIGTERM');
  });
});
