// The embedded database admits one process. `serve` holds `real/pgdata`; the same folder named another way (through
// a symbolic link, from another working directory with `..`, through `..` after a link) must meet the same lock:
// events and replay go through the running serve, migrate is refused as it is by the folder's own name, and nothing
// ever opens the folder a second time. serve is a process; the commands run through the CLI's run() in this one (a
// process of its own, as far as the lock goes: its pid is not serve's).
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { collect, runInProcess, spawnCli, waitForLog } from '../helpers/cli.js';
import { seedDataDir } from '../helpers/pglite-template.js';
import { serveAdmin } from '../helpers/serve-admin.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'data-dir-symlink-secret';
const IDS = ['evt_link_1', 'evt_link_2', 'evt_link_3'];

interface Listed {
  eventId: string;
  status: string;
}

describe('the embedded database named through a symbolic link or `..` while serve holds it', () => {
  it('events and replay go through serve, migrate is refused as by the real path, and the data stays whole', {
    timeout: 180_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-symlink-'));
    mkdirSync(join(dir, 'real', 'inner'), { recursive: true });
    mkdirSync(join(dir, 'sub'));
    symlinkSync('real', join(dir, 'link')); // link -> real
    symlinkSync(join('real', 'inner'), join(dir, 'deep')); // deep -> real/inner, so deep/.. is real
    // A migrated database already (its first start is not the subject): serve skips initdb and the migrations.
    seedDataDir(join(dir, 'real', 'pgdata'));
    // Each alias of real/pgdata, with the working directory it is given from.
    const aliases: { dataDir: string; cwd: string }[] = [
      { dataDir: 'link/pgdata', cwd: dir },
      { dataDir: '../link/pgdata', cwd: join(dir, 'sub') },
      { dataDir: 'deep/../pgdata', cwd: dir },
    ];
    const base = { DATABASE_URL: '', PAYHOOKS_WEBHOOK_SECRET: SECRET };
    const realEnv = { ...base, PAYHOOKS_DATA_DIR: 'real/pgdata' };
    const listThrough = async (env: Record<string, string>, cwd: string) => {
      const listed = await runInProcess(['events', 'list', '--json'], env, cwd);
      expect(listed.code, `events list with PAYHOOKS_DATA_DIR=${env.PAYHOOKS_DATA_DIR}: ${listed.stderr}`).toBe(0);
      return (JSON.parse(listed.stdout) as Listed[]).map((e) => `${e.eventId} ${e.status}`).sort();
    };

    const serve = spawnCli(['serve'], { ...realEnv, PORT: '0', HOST: '127.0.0.1' }, dir);
    const served = collect(serve, 170_000);
    try {
      const url = String((await waitForLog(serve, /receiving webhooks/)).url);
      // A customer each: the worker runs one resource's events one at a time, and their order is not the subject.
      for (const [i, id] of IDS.entries()) {
        const event = exampleEvent('CUSTOMER_CREATED', { eventId: id, data: { id: `cus_link_${i + 1}` } });
        expect((await fetch(url, signedRequest(event, { secret: SECRET }))).status).toBe(200);
      }
      const allDone = IDS.map((id) => `${id} done`);
      // Waited on through serve's API (no CLI process per poll), then asked of the command line once.
      const api = serveAdmin(join(dir, 'real', 'pgdata'));
      await waitFor(() => api.all('done', IDS.length), 'the three events done, seen through serve', 60_000);
      expect(await listThrough(realEnv, dir)).toEqual(allDone);
      const servePid = Number.parseInt(readFileSync(join(dir, 'real', 'pgdata.lock'), 'utf8'), 10);
      expect(servePid).toBe(serve.pid);

      // The same folder by other names: listed through serve, the same three events.
      const listedByAlias = [];
      for (const alias of aliases) listedByAlias.push(await listThrough({ ...base, PAYHOOKS_DATA_DIR: alias.dataDir }, alias.cwd));
      for (const [i, alias] of aliases.entries()) expect(listedByAlias[i], alias.dataDir).toEqual(allDone);

      // A replay through the link reaches serve: its worker runs the event again (a second opening would change
      // files serve never reads, and serve's own view would stay as it was).
      const shownThroughServe = async (id: string) => {
        const shown = await runInProcess(['events', 'show', id], realEnv, dir);
        expect(shown.code, shown.stderr).toBe(0);
        return JSON.parse(shown.stdout) as { status: string; processedAt: string | null };
      };
      const before = await shownThroughServe('evt_link_1');
      const replay = await runInProcess(['replay', 'evt_link_1'], { ...base, PAYHOOKS_DATA_DIR: 'link/pgdata' }, dir);
      expect(replay.code, replay.stderr).toBe(0);
      expect(replay.stdout).toContain('re-queued 1 event');
      await waitFor(
        async () => {
          const now = await api.event('evt_link_1');
          return now?.status === 'done' && now.processedAt?.toISOString() !== before.processedAt;
        },
        'the event replayed through the link run again by serve',
        60_000,
      );
      const after = await shownThroughServe('evt_link_1');
      expect(after.status).toBe('done');
      expect(after.processedAt).not.toBe(before.processedAt);

      // migrate is refused whichever name the folder is given by, with the same message.
      const refusedByRealPath = await runInProcess(['migrate'], realEnv, dir);
      expect(refusedByRealPath.code).toBe(1);
      expect(refusedByRealPath.stderr).toContain(`in use by process ${serve.pid}`);
      const refusals = [];
      for (const alias of aliases) refusals.push(await runInProcess(['migrate'], { ...base, PAYHOOKS_DATA_DIR: alias.dataDir }, alias.cwd));
      for (const [i, alias] of aliases.entries()) {
        const refused = refusals[i]!;
        expect({ alias: alias.dataDir, code: refused.code, stderr: refused.stderr }).toEqual({
          alias: alias.dataDir,
          code: 1,
          stderr: refusedByRealPath.stderr,
        });
      }

      // serve still owns its lock and answers.
      expect(Number.parseInt(readFileSync(join(dir, 'real', 'pgdata.lock'), 'utf8'), 10)).toBe(serve.pid);
      expect((await fetch(`${url.replace(/\/webhooks$/, '')}/healthz`)).status).toBe(200);
    } finally {
      serve.kill('SIGTERM');
    }
    expect((await served).code).toBe(0);

    // Opened once at a time, the database is whole: each event once, and migrate through the link now works.
    expect(await listThrough(realEnv, dir)).toEqual(IDS.map((id) => `${id} done`));
    const migrated = await runInProcess(['migrate'], { ...base, PAYHOOKS_DATA_DIR: 'link/pgdata' }, dir);
    expect(migrated.code, migrated.stderr).toBe(0);
  });
});
