-- Accounts (issue 48): many organizations of the service share one mirror, so a row is the state of a resource of
-- one account, keyed by (account, id): two organizations may well hold records with the same id.
--
-- The mirror keeps its own `accounts` table, in its own schema, because it may live apart from the inbox (another
-- schema, migrated on its own) and a foreign key must stay inside what this migration controls. The service keeps
-- it in step with its configuration at start (ensureMirrorAccounts, src/sync/mirror/accounts.ts): configured ids
-- are inserted, unconfigured ones that hold no rows removed. Every mirror table references it, so the database
-- itself refuses a row for an account that is not configured, whatever the code that writes it.
--
-- Existing rows belong to the implicit account of a single-account installation, 'default', which is also the
-- column default so that an installation without accounts keeps writing as before.

CREATE TABLE accounts (
  id          text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO accounts (id) VALUES ('default');

-- The items' key leads with their invoice's: its foreign key goes first, before the invoices' key it names changes.
ALTER TABLE invoice_items DROP CONSTRAINT invoice_items_invoice_id_fkey;

ALTER TABLE customers ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE customers DROP CONSTRAINT customers_pkey, ADD PRIMARY KEY (account, id);
DROP INDEX customers_email_idx;
CREATE INDEX customers_email_idx ON customers (account, email);

ALTER TABLE invoices ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE invoices DROP CONSTRAINT invoices_pkey, ADD PRIMARY KEY (account, id);
DROP INDEX invoices_customer_idx;
CREATE INDEX invoices_customer_idx ON invoices (account, customer_id);
DROP INDEX invoices_status_idx;
CREATE INDEX invoices_status_idx ON invoices (account, status, due_date);

ALTER TABLE invoice_items ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE invoice_items DROP CONSTRAINT invoice_items_pkey, ADD PRIMARY KEY (account, invoice_id, position);
ALTER TABLE invoice_items ADD CONSTRAINT invoice_items_invoice_fkey
  FOREIGN KEY (account, invoice_id) REFERENCES invoices (account, id) ON DELETE CASCADE;

ALTER TABLE payments ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE payments DROP CONSTRAINT payments_pkey, ADD PRIMARY KEY (account, id);
DROP INDEX payments_invoice_idx;
CREATE INDEX payments_invoice_idx ON payments (account, invoice_id);
DROP INDEX payments_time_idx;
CREATE INDEX payments_time_idx ON payments (account, payment_time);

ALTER TABLE payment_methods ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE payment_methods DROP CONSTRAINT payment_methods_pkey, ADD PRIMARY KEY (account, id);
DROP INDEX payment_methods_customer_idx;
CREATE INDEX payment_methods_customer_idx ON payment_methods (account, customer_id);

ALTER TABLE subscriptions ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_pkey, ADD PRIMARY KEY (account, id);
DROP INDEX subscriptions_customer_idx;
CREATE INDEX subscriptions_customer_idx ON subscriptions (account, customer_id);

ALTER TABLE refunds ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE refunds DROP CONSTRAINT refunds_pkey, ADD PRIMARY KEY (account, id);
DROP INDEX refunds_payment_idx;
CREATE INDEX refunds_payment_idx ON refunds (account, payment_id);

ALTER TABLE disputes ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE disputes DROP CONSTRAINT disputes_pkey, ADD PRIMARY KEY (account, id);
DROP INDEX disputes_payment_idx;
CREATE INDEX disputes_payment_idx ON disputes (account, payment_id);

-- Backfill and verify keep their place and findings per account: each account's pass reads its own API.
ALTER TABLE backfill_cursors ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE backfill_cursors DROP CONSTRAINT backfill_cursors_pkey, ADD PRIMARY KEY (account, resource, since_key);

ALTER TABLE verify_cursors ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE verify_cursors DROP CONSTRAINT verify_cursors_pkey, ADD PRIMARY KEY (account, resource, since_key);

ALTER TABLE verify_findings ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE verify_findings DROP CONSTRAINT verify_findings_pkey, ADD PRIMARY KEY (account, resource, since_key, id);

ALTER TABLE verify_seen ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE verify_seen DROP CONSTRAINT verify_seen_pkey, ADD PRIMARY KEY (account, resource, since_key, id);
