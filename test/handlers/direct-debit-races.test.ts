import type { Kysely, Transaction } from 'kysely';
import { describe, expect, it } from 'vitest';
import { recordCollection } from '../../handlers/direct-debit/collections.js';
import { recordRefund } from '../../handlers/direct-debit/disputes.js';
import { DIRECT_DEBIT_MIGRATIONS_DIR, type DirectDebitTables, expectCharge } from '../../handlers/direct-debit/index.js';
import { exampleEvent } from '../../src/events/examples.js';
import { migrateApp, readMigrations } from '../../src/store/migrate.js';
import { backends, dispose } from '../helpers/stores.js';

const postgres = backends.find((backend) => backend.name === 'postgres')!;

// The interleaving that once lost a refund in the month-long template test: the refund's handler commits while the
// collection of the same payment is between its read of the refunds and its commit.
describe('the direct-debit templates under concurrent handlers', () => {
  it.skipIf(!postgres.available)(
    'a refund recorded while its payment is being collected is counted on the charge',
    { timeout: 30_000 },
    async () => {
      const store = await postgres.open();
      const schema = `${store.schema}_dd`;
      try {
        await migrateApp(store, readMigrations(DIRECT_DEBIT_MIGRATIONS_DIR), { appSchema: schema });
        const db = (store.db.withoutPlugins() as unknown as Kysely<DirectDebitTables>).withSchema(schema);
        const refund = exampleEvent('PAYMENT_REFUNDED');
        const paymentId = refund.data.payment.id;
        await expectCharge(db, { invoiceId: 'inv_race', amount: 49_900, currency: 'MXN' });

        let release!: () => void;
        const held = new Promise<void>((resolve) => {
          release = resolve;
        });
        let collected!: () => void;
        const collectionWritten = new Promise<void>((resolve) => {
          collected = resolve;
        });
        // The collection writes the charge, then keeps its transaction open until the refund has had its chance.
        const collection = db.transaction().execute(async (trx: Transaction<DirectDebitTables>) => {
          const status = await recordCollection(
            trx,
            { invoiceId: 'inv_race', customerId: null, amount: 49_900, currency: 'MXN', items: null, paymentId, paidAt: new Date() },
            'evt_collection',
            false,
          );
          collected();
          await held;
          return status;
        });
        await collectionWritten;
        const refunding = db.transaction().execute((trx) => recordRefund(trx, refund));
        // Without a lock the refund commits now, its update of the charge matching no row yet.
        const refundFinishedFirst = await Promise.race([
          refunding.then(() => true),
          new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 300)),
        ]);
        release();
        expect(await collection).toBe('paid');
        await refunding;
        const charge = await db.selectFrom('charges').selectAll().where('invoice_id', '=', 'inv_race').executeTakeFirstOrThrow();
        expect(charge.payment_id).toBe(paymentId);
        expect(Number(charge.refunded_amount)).toBe(refund.data.refund.amount);
        // And it waited for the collection rather than racing it.
        expect(refundFinishedFirst).toBe(false);
      } finally {
        await dispose(store);
      }
    },
  );
});
