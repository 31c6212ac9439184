-- The Postgres mirror: the current state of the service's resources, kept by the mirror sink (src/sync/mirror/).
-- Applied in the mirror's own schema (default payhooks_mirror), apart from the inbox's.
--
-- Every table ends with the same bookkeeping columns:
--   data             the state as read (the API's answer, or the event's snapshot), unknown fields kept
--   source           'api' (read from the service) or 'event' (the event's own snapshot)
--   state_at, state_rank, state_hash
--                    the version of the state: a row is only replaced by a state whose (state_at, state_rank,
--                    state_hash) is at least as great, so an older state arriving late never overwrites a newer
--                    one, and equal versions resolve the same way on every run (docs/mirror.md)
--   last_event_id, last_event_type
--                    the event that last touched the row (null when backfill wrote it)
--   synced_at        when the row was last written

CREATE TABLE customers (
  id               text PRIMARY KEY,
  username         text,
  name             text,
  email            text,
  phone_number     text,
  archived         boolean NOT NULL DEFAULT false,
  archived_at      timestamptz,
  created_at       timestamptz,
  updated_at       timestamptz,
  meta             jsonb NOT NULL DEFAULT '{}',
  data             jsonb NOT NULL,
  source           text NOT NULL CHECK (source IN ('api', 'event')),
  state_at         timestamptz NOT NULL,
  state_rank       smallint NOT NULL,
  state_hash       text NOT NULL,
  last_event_id    text,
  last_event_type  text,
  synced_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX customers_email_idx ON customers (email);

CREATE TABLE invoices (
  id                 text PRIMARY KEY,
  customer_id        text,
  -- open, paid or canceled
  status             text NOT NULL,
  amount             numeric NOT NULL,
  currency           text NOT NULL,
  description        text,
  due_date           timestamptz,
  expire_date        timestamptz,
  collection_method  text,
  is_paid            boolean NOT NULL,
  paid_at            timestamptz,
  canceled_at        timestamptz,
  created_at         timestamptz,
  meta               jsonb NOT NULL DEFAULT '{}',
  data               jsonb NOT NULL,
  source             text NOT NULL CHECK (source IN ('api', 'event')),
  state_at           timestamptz NOT NULL,
  state_rank         smallint NOT NULL,
  state_hash         text NOT NULL,
  last_event_id      text,
  last_event_type    text,
  synced_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX invoices_customer_idx ON invoices (customer_id);
CREATE INDEX invoices_status_idx ON invoices (status, due_date);

-- Replaced as a whole whenever its invoice's row is.
CREATE TABLE invoice_items (
  invoice_id   text NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
  position     integer NOT NULL,
  description  text,
  amount       numeric NOT NULL,
  currency     text NOT NULL,
  quantity     numeric NOT NULL,
  concept_id   text,
  PRIMARY KEY (invoice_id, position)
);

CREATE TABLE payments (
  id                  text PRIMARY KEY,
  invoice_id          text,
  customer_id         text,
  amount              numeric NOT NULL,
  currency            text NOT NULL,
  type                text,
  status              text,
  is_completed        boolean,
  payment_time        timestamptz,
  authorization_code  text,
  created_at          timestamptz,
  meta                jsonb NOT NULL DEFAULT '{}',
  data                jsonb NOT NULL,
  source              text NOT NULL CHECK (source IN ('api', 'event')),
  state_at            timestamptz NOT NULL,
  state_rank          smallint NOT NULL,
  state_hash          text NOT NULL,
  last_event_id       text,
  last_event_type     text,
  synced_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payments_invoice_idx ON payments (invoice_id);
CREATE INDEX payments_time_idx ON payments (payment_time);

CREATE TABLE payment_methods (
  id                 text PRIMARY KEY,
  customer_id        text,
  type               text NOT NULL,
  confirmed          boolean,
  charges_consented  boolean,
  card_brand         text,
  card_last4         text,
  bank_name          text,
  data               jsonb NOT NULL,
  source             text NOT NULL CHECK (source IN ('api', 'event')),
  state_at           timestamptz NOT NULL,
  state_rank         smallint NOT NULL,
  state_hash         text NOT NULL,
  last_event_id      text,
  last_event_type    text,
  synced_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_methods_customer_idx ON payment_methods (customer_id);

CREATE TABLE subscriptions (
  id                     text PRIMARY KEY,
  customer_id            text,
  description            text,
  status                 text,
  is_active              boolean NOT NULL,
  is_completed           boolean NOT NULL,
  first_collection_date  timestamptz,
  last_collection_date   timestamptz,
  next_collection_date   timestamptz,
  number_of_payments     integer,
  collection_method      text,
  meta                   jsonb NOT NULL DEFAULT '{}',
  data                   jsonb NOT NULL,
  source                 text NOT NULL CHECK (source IN ('api', 'event')),
  state_at               timestamptz NOT NULL,
  state_rank             smallint NOT NULL,
  state_hash             text NOT NULL,
  last_event_id          text,
  last_event_type        text,
  synced_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscriptions_customer_idx ON subscriptions (customer_id);

CREATE TABLE refunds (
  id                 text PRIMARY KEY,
  payment_id         text,
  customer_id        text,
  amount             numeric NOT NULL,
  currency           text NOT NULL,
  status             text NOT NULL,
  reason             text,
  created_at         timestamptz,
  status_updated_at  timestamptz,
  data               jsonb NOT NULL,
  source             text NOT NULL CHECK (source IN ('api', 'event')),
  state_at           timestamptz NOT NULL,
  state_rank         smallint NOT NULL,
  state_hash         text NOT NULL,
  last_event_id      text,
  last_event_type    text,
  synced_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refunds_payment_idx ON refunds (payment_id);

CREATE TABLE disputes (
  id                   text PRIMARY KEY,
  payment_id           text,
  customer_id          text,
  status               text NOT NULL,
  reason               text,
  respond_by           timestamptz,
  created_at           timestamptz,
  resolved_at          timestamptz,
  lost_reason          text,
  response_id          text,
  response_created_at  timestamptz,
  data                 jsonb NOT NULL,
  source               text NOT NULL CHECK (source IN ('api', 'event')),
  state_at             timestamptz NOT NULL,
  state_rank           smallint NOT NULL,
  state_hash           text NOT NULL,
  last_event_id        text,
  last_event_type      text,
  synced_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX disputes_payment_idx ON disputes (payment_id);

-- Where `payhooks backfill` is in each resource's pages, so an interrupted run resumes instead of restarting.
-- since_key: the --since date as given (ISO) or '' for all; a run with another --since starts its own cursor.
CREATE TABLE backfill_cursors (
  resource     text NOT NULL,
  since_key    text NOT NULL,
  next_skip    integer NOT NULL DEFAULT 0,
  written      integer NOT NULL DEFAULT 0,
  finished_at  timestamptz,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (resource, since_key)
);
