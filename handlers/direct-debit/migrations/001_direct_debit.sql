-- The direct-debit templates' tables (handlers/direct-debit/), in their own schema (default direct_debit).
-- Each handler writes here in the transaction that records its completion, so each effect happens once.

-- A customer's saved payment method and the consent to charge it. Masked details only: a card's brand and last
-- four digits, a bank account's bank and the CLABE's last digits; the service never sends more.
CREATE TABLE mandates (
  payment_method_id  text PRIMARY KEY,
  customer_id        text NOT NULL,
  type               text NOT NULL,
  confirmed          boolean NOT NULL,
  charges_consented  boolean NOT NULL,
  card_brand         text,
  card_last4         text,
  card_expiry_month  integer,
  card_expiry_year   integer,
  bank_name          text,
  bank_code          text,
  clabe_last         text,
  -- active, or revoked (the customer was archived)
  status             text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
  revoked_at         timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  last_event_id      text NOT NULL
);
CREATE INDEX mandates_customer_idx ON mandates (customer_id);

-- One row per invoice the app expects to collect (expectCharge) or that was collected without an expectation.
CREATE TABLE charges (
  invoice_id          text PRIMARY KEY,
  customer_id         text,
  -- What the app expected: amount in the currency's minor unit, and the items as it issued them.
  expected_amount     bigint,
  expected_currency   text,
  expected_items      jsonb,
  expected_at         timestamptz,
  --   expected    waiting for its money
  --   paid        collected, and it matched the expectation (recorded once, by whichever event came first)
  --   mismatch    collected, but the amount, currency or items differ: a person decides; never counted as paid
  --   unexpected  collected with no expectation on record
  status              text NOT NULL CHECK (status IN ('expected', 'paid', 'mismatch', 'unexpected')),
  mismatch            text,
  paid_amount         bigint,
  paid_currency       text,
  payment_id          text,
  paid_at             timestamptz,
  collected_by_event  text,
  -- Kept current from the disputes and refunds tables, whichever order their events arrive in.
  disputed            boolean NOT NULL DEFAULT false,
  refunded_amount     bigint NOT NULL DEFAULT 0,
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX charges_payment_idx ON charges (payment_id);

-- Each failed collection attempt, once; the dunning hook is called in the same transaction.
CREATE TABLE payment_failures (
  attempt_id       text PRIMARY KEY,
  payment_id       text NOT NULL,
  customer_id      text,
  invoice_id       text,
  attempt_number   integer NOT NULL,
  error_type       text,
  error_code       text,
  amount           bigint,
  currency         text,
  failed_at        timestamptz,
  dunning_called   boolean NOT NULL DEFAULT false,
  recorded_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_failures_payment_idx ON payment_failures (payment_id);

CREATE TABLE subscriptions (
  id                    text PRIMARY KEY,
  customer_id           text,
  status                text,
  is_active             boolean NOT NULL,
  canceled              boolean NOT NULL DEFAULT false,
  first_collection_at   timestamptz,
  last_collection_at    timestamptz,
  next_collection_at    timestamptz,
  number_of_payments    integer,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  last_event_id         text NOT NULL
);

CREATE TABLE disputes (
  id              text PRIMARY KEY,
  payment_id      text NOT NULL,
  status          text NOT NULL,
  -- 0 created, 1 answered, 2 resolved: a late event never moves a dispute back
  stage           smallint NOT NULL,
  reason          text,
  -- the evidence deadline
  respond_by      timestamptz,
  responded_at    timestamptz,
  resolved_at     timestamptz,
  lost_reason     text,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX disputes_payment_idx ON disputes (payment_id);

CREATE TABLE refunds (
  id                 text PRIMARY KEY,
  payment_id         text NOT NULL,
  amount             bigint NOT NULL,
  currency           text NOT NULL,
  status             text NOT NULL,
  status_updated_at  timestamptz NOT NULL,
  reason             text,
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refunds_payment_idx ON refunds (payment_id);
