-- The table of fpx-collect's PostgreSQL store (`fpx-collect/postgres`), for those who manage their schema
-- themselves. The store creates exactly this on first use when the table is missing; with the table made from
-- this file, its database role needs only SELECT, INSERT, UPDATE and DELETE on it.
--
-- For another table name (the store's `table` option), replace fpx_collect in both statements.
--
--   exchange_number   one row per payment (the service's exchange_number)
--   handled           the payment states whose handlers completed ('pending', 'failed', 'succeeded')
--   lease_*           the delivery working on the payment now: a random owner token, the state, until when
--   expires_at        when the row may be pruned (retention after the last completion), unless a lease holds it

CREATE TABLE IF NOT EXISTS "fpx_collect" (
  exchange_number text PRIMARY KEY,
  handled text[] NOT NULL DEFAULT '{}' CHECK (handled <@ ARRAY['pending', 'failed', 'succeeded']),
  lease_owner text,
  lease_state text CHECK (lease_state IN ('pending', 'failed', 'succeeded')),
  lease_expires_at timestamptz,
  expires_at timestamptz NOT NULL
);

CREATE INDEX IF NOT EXISTS "fpx_collect_expires_at_idx" ON "fpx_collect" (expires_at);
