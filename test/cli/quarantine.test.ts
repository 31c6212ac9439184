import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks } from '../../src/payhooks.js';
import { createReceiver } from '../../src/receiver/receiver.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { runInProcess } from '../helpers/cli.js';
import { seedDataDir } from '../helpers/pglite-template.js';
import { waitFor } from '../helpers/wait.js';

// The commands run through the CLI's run() in this process, on an embedded database on disk: no process is started.
describe('payhooks quarantine', () => {
  it('lists what is held (also as events list --status quarantined), shows it, releases one and discards another', {
    timeout: 180_000,
  }, async () => {
    const dataDir = seedDataDir(join(mkdtempSync(join(tmpdir(), 'payhooks-quarantine-')), 'pgdata'));
    const store = await openDatabase({ dataDir });
    const scheme = createDefaultScheme({ secrets: 'cli-quarantine' });
    const send = async (body: string) => {
      const rawBody = Buffer.from(body);
      const receiver = createReceiver({ store, scheme, logger: pino({ level: 'silent' }) });
      const answer = await receiver.receive({
        method: 'POST',
        headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) },
        rawBody,
      });
      return /#(\d+)\./.exec(JSON.parse(answer.body).error.message)![1]!;
    };
    let longResource: string;
    let notJson: string;
    try {
      await migrate(store);
      // Its resource id is too long to order by, and its data holds U+0000, which Postgres text cannot.
      const paid = exampleEvent('INVOICE_PAID', {
        eventId: 'evt_cli_q',
        data: { invoiceId: 'i'.repeat(400), description: 'Paid\u0000in full' },
      });
      longResource = await send(JSON.stringify(paid));
      notJson = await send('{"eventId": oops');
    } finally {
      await store.close();
    }
    const env = { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir };
    const list = await runInProcess(['events', 'list', '--status', 'quarantined'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${notJson}\\s+-\\s+-\\s+quarantined\\s+not_json`));
    expect(list.stdout).toMatch(new RegExp(`${longResource}\\s+evt_cli_q\\s+INVOICE_PAID\\s+quarantined\\s+unstorable_resource`));

    const show = await runInProcess(['quarantine', 'show', notJson], env);
    expect(JSON.parse(show.stdout)).toMatchObject({ kind: 'not_json', rawBody: '{"eventId": oops', state: 'held' });

    const refused = await runInProcess(['quarantine', 'release', longResource], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/still cannot be stored: .*release it with --unordered/i);
    const released = await runInProcess(['quarantine', 'release', longResource, '--unordered'], env);
    expect(released.stdout.trim()).toBe(`released #${longResource} as event evt_cli_q: queued`);
    const discarded = await runInProcess(['quarantine', 'discard', notJson], env);
    expect(discarded.stdout.trim()).toBe(`discarded #${notJson}`);
    // What the loser of a release and a discard at the same moment is told (test/receiver/quarantine-race.test.ts
    // races them): exit 1, what became of the delivery and when, and that this command did nothing.
    const lateDiscard = await runInProcess(['quarantine', 'discard', longResource], env);
    expect(lateDiscard.code).toBe(1);
    expect(lateDiscard.stderr.trim()).toMatch(
      new RegExp(
        `^payhooks: Quarantined delivery #${longResource} was already released at [-\\dT:.]+Z as event "evt_cli_q"; it was not discarded\\.$`,
      ),
    );
    const lateRelease = await runInProcess(['quarantine', 'release', notJson], env);
    expect(lateRelease.code).toBe(1);
    expect(lateRelease.stderr.trim()).toMatch(
      new RegExp(`^payhooks: Quarantined delivery #${notJson} was already discarded at [-\\dT:.]+Z: nothing was stored\\.$`),
    );
    expect((await runInProcess(['quarantine', 'list'], env)).stdout.trim()).toBe('nothing quarantined');
    expect((await runInProcess(['events', 'list'], env)).stdout).toMatch(/evt_cli_q\s+INVOICE_PAID\s+pending/);

    // The released event goes through the worker and the mirror to done, its U+0000 stored as U+FFFD.
    const reopened = await openDatabase({ dataDir });
    const hooks = createPayhooks<ApiClient>({ database: reopened, logger: pino({ level: 'silent' }), worker: { pollIntervalMs: 50 } });
    try {
      const { schema } = await registerMirror(hooks);
      await hooks.start();
      await waitFor(async () => {
        const event = await getEvent(reopened, 'evt_cli_q');
        return event !== undefined && (!['pending', 'processing'].includes(event.status) || event.lastError !== null);
      }, 'evt_cli_q run');
      expect(await getEvent(reopened, 'evt_cli_q')).toMatchObject({ status: 'done', lastError: null });
      const { rows } = await sql<{ id: string; description: string }>`select id, description from ${sql.id(schema, 'invoices')}`.execute(
        reopened.db.withoutPlugins(),
      );
      expect(rows).toEqual([{ id: 'i'.repeat(400), description: 'Paid\ufffdin full' }]);
    } finally {
      await hooks.stop();
      await reopened.close();
    }
  });
});
