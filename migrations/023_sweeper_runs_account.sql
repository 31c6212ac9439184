-- Each account's sweeps recorded apart (issue 48, item 6: operator views for one account or all). serve's gap sweeper
-- reconciles and verifies each account through that account's own API client, with its own events and mirror rows,
-- and the console's verify runs for the account filtered on or for each; every run is one row, naming its account.
--
-- NULL: a run recorded before this migration, which read through the default account's client (or the first
-- configured account's, when there was no default). No foreign key to accounts: a run's record names an account as it
-- names events (by text), and must not keep an account the configuration dropped from being removed.
ALTER TABLE sweeper_runs ADD COLUMN account text;

-- The newest run of each account (the health panel, /metrics and the console read one per configured account).
CREATE INDEX sweeper_runs_account_newest_idx ON sweeper_runs (account, finished_at DESC, id DESC);
