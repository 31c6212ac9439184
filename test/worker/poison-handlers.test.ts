import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { libraryEntry } from '../helpers/cli.js';
import { putEvent } from '../helpers/inbox.js';
import { pgUrl } from '../helpers/pg.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const dyingWorker = fileURLToPath(new URL('../fixtures/dying-worker.mjs', import.meta.url));

describe.skipIf(!pgUrl)('a handler that kills its process', () => {
  const stores: PayhooksDatabase[] = [];
  afterAll(async () => {
    for (const store of stores) await dispose(store);
  });

  it('is not run forever: after maxAttempts deaths the event is dead, with the reason', { timeout: 150_000 }, async () => {
    const store = await backends[0]!.open();
    stores.push(store);
    await putEvent(store, exampleEvent('INVOICE_PAID', { eventId: 'evt_exit' }));
    const { execArgv, entry } = libraryEntry();
    // A supervisor restarting the process each time it dies, bounded to 8 restarts.
    const exitCodes: (number | null)[] = [];
    for (let restart = 0; restart < 8; restart++) {
      const child = fork(dyingWorker, [], {
        execArgv,
        env: { ...process.env, DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: store.schema, PAYHOOKS_TEST_ENTRY: entry },
        stdio: 'ignore',
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const outcome = await Promise.race([
        exited,
        // Long enough for a process to start, claim and die on a machine busy with the rest of the suite.
        waitFor(async () => (await getEvent(store, 'evt_exit'))?.status === 'dead', 'dead', 25_000)
          .then(() => 'dead' as const)
          .catch(() => 'alive' as const),
      ]);
      if (outcome === 'dead' || outcome === 'alive') {
        child.kill('SIGKILL');
        await exited;
        break;
      }
      exitCodes.push(outcome);
    }
    const event = await getEvent(store, 'evt_exit');
    expect(exitCodes).toEqual([3, 3, 3]);
    expect(event?.status).toBe('dead');
    expect(event?.attempts).toBe(3);
    expect(event?.lastError).toMatch(/died .* after 3 claims of 3 allowed/);
  });
});

describe.each(backends.filter((backend) => backend.available))('thrown values of any shape ($name)', (backend) => {
  it('a handler that throws a null-prototype object, or a huge message, is recorded as a failure, not a crash', {
    timeout: 60_000,
  }, async () => {
    const store = await backend.open();
    const hooks = createPayhooks({
      database: store,
      logger: pino({ level: 'silent' }),
      worker: { maxAttempts: 1, pollIntervalMs: 50 },
    });
    hooks.on('INVOICE_PAID', () => {
      throw Object.create(null);
    });
    hooks.on('CUSTOMER_CREATED', () => {
      throw new Error(`boom ${'x'.repeat(10_000_000)}`);
    });
    try {
      await putEvent(store, exampleEvent('INVOICE_PAID', { eventId: 'evt_nullproto' }));
      await putEvent(store, exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_huge' }));
      await hooks.start();
      await waitFor(
        async () => (await getEvent(store, 'evt_nullproto'))?.status === 'dead' && (await getEvent(store, 'evt_huge'))?.status === 'dead',
        'both events dead',
      );
      expect((await getEvent(store, 'evt_nullproto'))?.lastError).toMatch(/object without prototype/);
      const huge = (await getEvent(store, 'evt_huge'))?.lastError ?? '';
      expect(huge.length).toBeLessThan(9000);
      expect(huge).toMatch(/^Error: boom x+… \[cut: 10000012 characters in all\]$/);
    } finally {
      await hooks.stop();
      await dispose(store);
    }
  });
});

describe.each(backends.filter((backend) => backend.available))('a handler that logs the event ($name)', (backend) => {
  it("puts no email or phone number into the app's own log, at any depth", { timeout: 60_000 }, async () => {
    const store = await backend.open();
    const lines: string[] = [];
    // The app's own pino logger, not payhooks' default: ctx.logger is a scrubbing child of it all the same.
    const appLogger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const hooks = createPayhooks({ database: store, logger: appLogger, worker: { pollIntervalMs: 50 } });
    hooks.on('PAYMENT_COMPLETED', (event, ctx) => {
      ctx.logger.info({ event }, 'payment completed');
      ctx.logger.info({ contact: { nested: { email: event.data.customer.email } } }, `call ${event.data.customer.phoneNumber}`);
    });
    const event = exampleEvent('PAYMENT_COMPLETED', { eventId: 'evt_logged' });
    const { email, phoneNumber } = event.data.customer;
    try {
      expect(email).toMatch(/@/);
      expect(phoneNumber).toMatch(/^\+\d+/);
      await putEvent(store, event);
      await hooks.start();
      await waitFor(async () => (await getEvent(store, 'evt_logged'))?.status === 'done', 'the event to be handled');
      const log = lines.join('');
      expect(log).toContain('payment completed');
      expect(log).toContain('evt_logged');
      expect(log).not.toContain(email!);
      expect(log).not.toContain(phoneNumber!);
    } finally {
      await hooks.stop();
      await dispose(store);
    }
  });
});
