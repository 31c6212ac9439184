import type { ColumnType, Generated, Kysely, Transaction } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type Json = ColumnType<unknown, string | null | undefined, string | null>;
/** bigint columns come back as strings from pg (exact), as numbers from PGlite; writes take numbers. */
type Money = ColumnType<string | number, number, number>;
type NullableMoney = ColumnType<string | number | null, number | null | undefined, number | null>;

/** The tables of migrations/001_direct_debit.sql, for Kysely. */
export interface DirectDebitTables {
  mandates: {
    payment_method_id: string;
    customer_id: string;
    type: string;
    confirmed: boolean;
    charges_consented: boolean;
    card_brand: string | null;
    card_last4: string | null;
    card_expiry_month: number | null;
    card_expiry_year: number | null;
    bank_name: string | null;
    bank_code: string | null;
    clabe_last: string | null;
    status: ColumnType<'active' | 'revoked', 'active' | 'revoked' | undefined, 'active' | 'revoked'>;
    revoked_at: NullableTimestamp;
    created_at: Generated<Date>;
    updated_at: Generated<Date>;
    last_event_id: string;
  };
  charges: {
    invoice_id: string;
    customer_id: string | null;
    expected_amount: NullableMoney;
    expected_currency: string | null;
    expected_items: Json;
    expected_at: NullableTimestamp;
    status: 'expected' | 'paid' | 'mismatch' | 'unexpected';
    mismatch: string | null;
    paid_amount: NullableMoney;
    paid_currency: string | null;
    payment_id: string | null;
    paid_at: NullableTimestamp;
    collected_by_event: string | null;
    disputed: Generated<boolean>;
    refunded_amount: ColumnType<string | number, number | undefined, number>;
    updated_at: Generated<Date>;
  };
  payment_failures: {
    attempt_id: string;
    payment_id: string;
    customer_id: string | null;
    invoice_id: string | null;
    attempt_number: number;
    error_type: string | null;
    error_code: string | null;
    amount: NullableMoney;
    currency: string | null;
    failed_at: NullableTimestamp;
    dunning_called: Generated<boolean>;
    recorded_at: Generated<Date>;
  };
  subscriptions: {
    id: string;
    customer_id: string | null;
    status: string | null;
    is_active: boolean;
    canceled: boolean;
    first_collection_at: NullableTimestamp;
    last_collection_at: NullableTimestamp;
    next_collection_at: NullableTimestamp;
    number_of_payments: number | null;
    updated_at: Generated<Date>;
    last_event_id: string;
  };
  disputes: {
    id: string;
    payment_id: string;
    status: string;
    stage: number;
    reason: string | null;
    respond_by: NullableTimestamp;
    responded_at: NullableTimestamp;
    resolved_at: NullableTimestamp;
    lost_reason: string | null;
    updated_at: Generated<Date>;
  };
  refunds: {
    id: string;
    payment_id: string;
    amount: Money;
    currency: string;
    status: string;
    status_updated_at: Timestamp;
    reason: string | null;
    updated_at: Generated<Date>;
  };
}

/** A connection or transaction already pointed at the templates' schema (`db.withSchema(schema)`). */
export type DirectDebitDb = Kysely<DirectDebitTables> | Transaction<DirectDebitTables>;
