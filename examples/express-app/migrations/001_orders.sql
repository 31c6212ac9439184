-- The app's own table, in appSchema "shop" (payhooks runs this file with search_path = shop, public).
-- One row per invoice of the Payment Collection Service: the app creates it when it sells something, and the
-- INVOICE_PAID handler marks it paid. The handler may run first (a webhook can beat the app's own write), so it
-- inserts the row when it is missing rather than assuming it exists.
CREATE TABLE orders (
  invoice_id    text        PRIMARY KEY,
  description   text,
  status        text        NOT NULL DEFAULT 'awaiting_payment' CHECK (status IN ('awaiting_payment', 'paid')),
  amount        integer,    -- minor units of currency (centavos for MXN), as the service counts money
  currency      text,
  paid_at       timestamptz,
  paid_by_event text,       -- the eventId that marked it paid: where to look with `payhooks events show`
  created_at    timestamptz NOT NULL DEFAULT now()
);
