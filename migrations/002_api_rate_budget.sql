-- A request budget shared by every process that uses this database (createPostgresRateLimiter): the
-- service allows 1,000 requests per minute per IP address, whichever process sends them.
-- One row per budget and fixed window; `used` counts the requests granted in it.

CREATE TABLE api_rate_budget (
  budget        text NOT NULL DEFAULT 'default',
  window_start  timestamptz NOT NULL,
  used          integer NOT NULL CHECK (used >= 0),
  PRIMARY KEY (budget, window_start)
);
