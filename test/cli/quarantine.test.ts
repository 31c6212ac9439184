import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createReceiver } from '../../src/receiver/receiver.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { runInProcess } from '../helpers/cli.js';
import { seedDataDir } from '../helpers/pglite-template.js';

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
      longResource = await send(JSON.stringify({ eventId: 'evt_cli_q', eventType: 'INVOICE_PAID', data: { invoiceId: 'i'.repeat(400) } }));
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
  });
});
