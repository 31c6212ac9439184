import { type AdminClient, createAdminClient } from '../../src/console/admin-client.js';
import type { EventStatus } from '../../src/store/schema.js';
import { readServeSession } from '../../src/service/serve-session.js';

/** What a test waits on while `payhooks serve` holds the embedded database: see {@link serveAdmin}. */
export interface ServeAdmin {
  /** Whether serve's inbox holds exactly `count` events, all in `status`. */
  all(status: EventStatus, count: number): Promise<boolean>;
  /** One event as serve's console API shows it (undefined when none is stored). */
  event: (eventId: string) => ReturnType<AdminClient['getEvent']>;
}

/**
 * Serve's console API with the session token it wrote beside `dataDir` for this machine's command line (the routes
 * `payhooks events` and `replay` use). A wait polls this instead of spawning a CLI on every poll (about 0.5 s of CPU
 * each); what a test asserts about the command line is still asked of a spawned CLI, once, after the wait.
 *
 * @example
 * await waitFor(() => serveAdmin(dataDir).all('done', 3), 'the three events done', 60_000);
 */
export function serveAdmin(dataDir: string): ServeAdmin {
  const session = readServeSession(dataDir);
  if (!session) throw new Error(`no serve session beside ${dataDir}: is serve running on it?`);
  const admin = createAdminClient({ url: session.url, token: session.token });
  return {
    async all(status, count) {
      const { byTypeAndStatus } = await admin.stats();
      const sum = (rows: typeof byTypeAndStatus) => rows.reduce((total, row) => total + row.count, 0);
      return sum(byTypeAndStatus) === count && sum(byTypeAndStatus.filter((row) => row.status === status)) === count;
    },
    event: (eventId) => admin.getEvent(eventId, { reveal: false }),
  };
}
