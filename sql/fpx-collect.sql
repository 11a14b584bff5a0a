-- The table of fpx-collect's PostgreSQL store (`fpx-collect/postgres`), for those who manage their schema
-- themselves. The store creates exactly this on first use when the table is missing; with the table made from
-- this file, its database role needs only SELECT, INSERT, UPDATE and DELETE on the tables (and USAGE on the
-- timeline's id sequence, fpx_collect_timeline_id_seq).
--
-- For another table name (the store's `table` option), replace fpx_collect in every statement.
--
--   exchange_number   one row per payment (the service's exchange_number)
--   handled           the payment states whose handlers completed ('pending', 'failed', 'succeeded')
--   lease_*           the delivery working on the payment now: a random owner token, the state, until when
--   expires_at        when the row may be pruned (retention after the last completion), unless a lease holds it
--   paid_order_number set when the payment's success was handled: the order it paid, and the merchant's API UID
--   paid_uid          when the result named one (a later result of another payment of that order is told so)
--
-- Upgrading from a version without paid_order_number: run this file again (every statement is IF NOT EXISTS, and
-- the ALTER TABLE below adds the two columns to the existing table), or let the store's migrate() do it.

CREATE TABLE IF NOT EXISTS "fpx_collect" (
  exchange_number text PRIMARY KEY,
  handled text[] NOT NULL DEFAULT '{}' CHECK (handled <@ ARRAY['pending', 'failed', 'succeeded']),
  lease_owner text,
  lease_state text CHECK (lease_state IN ('pending', 'failed', 'succeeded')),
  lease_expires_at timestamptz,
  expires_at timestamptz NOT NULL,
  paid_order_number text,
  paid_uid text
);

CREATE INDEX IF NOT EXISTS "fpx_collect_expires_at_idx" ON "fpx_collect" (expires_at);

ALTER TABLE "fpx_collect" ADD COLUMN IF NOT EXISTS paid_order_number text, ADD COLUMN IF NOT EXISTS paid_uid text;

CREATE INDEX IF NOT EXISTS "fpx_collect_paid_idx" ON "fpx_collect" (paid_order_number) WHERE paid_order_number IS NOT NULL;

-- Inbox mode (createReceiver({ store, inbox: {} })): one row per (exchange_number, state) verified and waiting for
-- its handlers, or dead-lettered after too many attempts; deleted once handled. Replace fpx_collect here too.
--
--   rank              0 pending, 1 failed, 2 succeeded: a row waits while a higher one of its exchange_number is here
--   fields            the verified fields as JSON text; rendering, the one their checksum matched; signer, who
--                     signed them (JSON text; null in rows written before it was kept)
--   status            'pending' or 'dead'; attempts so far; next_attempt_at, the backoff
--   lease_*           the worker running an attempt now, and until when
--   last_error        why the last attempt failed

CREATE TABLE IF NOT EXISTS "fpx_collect_inbox" (
  exchange_number text NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'failed', 'succeeded')),
  rank smallint NOT NULL,
  source text NOT NULL CHECK (source IN ('callback', 'redirect', 'reconcile')),
  order_number text,
  fields text NOT NULL,
  rendering text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  lease_owner text,
  lease_expires_at timestamptz,
  last_error text,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (exchange_number, state)
);

CREATE INDEX IF NOT EXISTS "fpx_collect_inbox_due_idx" ON "fpx_collect_inbox" (status, next_attempt_at);

ALTER TABLE "fpx_collect_inbox" ADD COLUMN IF NOT EXISTS signer text;

-- The per-order timeline (receiver.timeline()): one row per entry, read by order_number or exchange_number,
-- pruned with the table above. Another table name: replace fpx_collect in the names below too.
--
--   event             received, refused, verified, duplicate, stale, busy, handler_failed, failed, processed, dead_lettered
--   verified          false when the numbers were read from a refused (unverified) message
--   attempt           groups the entries of one delivery or inbox attempt

CREATE TABLE IF NOT EXISTS "fpx_collect_timeline" (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL,
  event text NOT NULL,
  exchange_number text,
  order_number text,
  state text,
  source text NOT NULL,
  attempt text NOT NULL,
  verified boolean NOT NULL,
  code text,
  status integer,
  message text,
  expires_at timestamptz NOT NULL
);

CREATE INDEX IF NOT EXISTS "fpx_collect_tl_ex_idx" ON "fpx_collect_timeline" (exchange_number, at);

CREATE INDEX IF NOT EXISTS "fpx_collect_tl_ord_idx" ON "fpx_collect_timeline" (order_number, at);

CREATE INDEX IF NOT EXISTS "fpx_collect_tl_exp_idx" ON "fpx_collect_timeline" (expires_at);

-- The payment book (payments known from creation, issue 26's sweeper): one row per order_number and credential set
-- (uid) the merchant's client recorded when it created the payment, or that the store first knew from a verified
-- result (kind 'result'). Open rows stay until a final result or the sweeper's abandon closes them; closed rows are
-- pruned with the tables above after the retention. Replace fpx_collect here too.
--
--   amount_sen … attached   the payment as last asked (attached: what the merchant attached, as given)
--   asked_sen               every amount asked for the order, oldest first, the latest last (at most 10)
--   status                  open, succeeded, failed or abandoned; state, the latest payment state handled
--   lookups, *_lookup_at    the sweeper's status lookups so far, the last one, when the next is due
--   expires_at              null while open; once closed, when the row may be pruned
--   buyer_email, buyer_name from the creation, else from the first result that carried them
--   failures, last_failure_* handler failures since a state of their rank was handled, and the latest one
--   settled_at              when the latest state was handled
--
-- Upgrading from a version without buyer_email: run this file again (the ALTER TABLE adds the columns, and the DO
-- block lets kind take 'result'), or let the store's migrate() do it.

CREATE TABLE IF NOT EXISTS "fpx_collect_book" (
  order_number text COLLATE "C" NOT NULL,
  amount_sen bigint NOT NULL,
  asked_sen bigint[] NOT NULL,
  uid text COLLATE "C" NOT NULL,
  kind text NOT NULL CHECK (kind IN ('form', 'payment', 'session', 'result')),
  created_at timestamptz NOT NULL,
  exchange_number text,
  attached json NOT NULL,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'succeeded', 'failed', 'abandoned')),
  state text CHECK (state IN ('pending', 'failed', 'succeeded')),
  lookups integer NOT NULL DEFAULT 0,
  last_lookup_at timestamptz,
  next_lookup_at timestamptz,
  expires_at timestamptz,
  buyer_email text COLLATE "C",
  buyer_name text,
  failures integer NOT NULL DEFAULT 0,
  last_failure_at timestamptz,
  last_failure_state text CHECK (last_failure_state IN ('pending', 'failed', 'succeeded')),
  last_failure_message text,
  settled_at timestamptz,
  PRIMARY KEY (order_number, uid)
);

CREATE INDEX IF NOT EXISTS "fpx_collect_book_open_idx" ON "fpx_collect_book" (created_at, order_number, uid) WHERE status = 'open';

CREATE INDEX IF NOT EXISTS "fpx_collect_book_exp_idx" ON "fpx_collect_book" (expires_at);

ALTER TABLE "fpx_collect_book" ADD COLUMN IF NOT EXISTS buyer_email text COLLATE "C", ADD COLUMN IF NOT EXISTS buyer_name text, ADD COLUMN IF NOT EXISTS failures integer NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS last_failure_at timestamptz, ADD COLUMN IF NOT EXISTS last_failure_state text CHECK (last_failure_state IN ('pending', 'failed', 'succeeded')), ADD COLUMN IF NOT EXISTS last_failure_message text, ADD COLUMN IF NOT EXISTS settled_at timestamptz;

DO $$ DECLARE found text; BEGIN
  SELECT c.conname INTO found FROM pg_constraint AS c WHERE c.conrelid = '"fpx_collect_book"'::regclass AND c.contype = 'c'
    AND pg_get_constraintdef(c.oid) LIKE '%kind%' AND pg_get_constraintdef(c.oid) NOT LIKE '%result%';
  IF found IS NOT NULL THEN
    EXECUTE format('ALTER TABLE "fpx_collect_book" DROP CONSTRAINT %I, ADD CONSTRAINT %I CHECK (kind IN (''form'', ''payment'', ''session'', ''result''))', found, found);
  END IF;
END $$;

-- Locks held across the processes sharing the store, one row each (the sweeper's: name 'sweep'). token is the
-- fencing token of the latest holder and only grows; expires_at ends the holder's lease (-infinity once released);
-- last_pass, what the sweeper's latest pass did (JSON text), for the operator.

CREATE TABLE IF NOT EXISTS "fpx_collect_locks" (
  name text PRIMARY KEY,
  token bigint NOT NULL,
  owner text,
  expires_at timestamptz NOT NULL,
  last_pass text
);

ALTER TABLE "fpx_collect_locks" ADD COLUMN IF NOT EXISTS last_pass text;

-- The operator's questions (payments list, the console): pages newest first of every payment, of one status, of the
-- successes whose handlers fail; a search by exchange_number or buyer e-mail; results per hour.

CREATE INDEX IF NOT EXISTS "fpx_collect_book_new_idx" ON "fpx_collect_book" (created_at, order_number, uid);

CREATE INDEX IF NOT EXISTS "fpx_collect_book_st_idx" ON "fpx_collect_book" (status, created_at, order_number, uid);

CREATE INDEX IF NOT EXISTS "fpx_collect_book_fail_idx" ON "fpx_collect_book" (created_at, order_number, uid) WHERE failures > 0;

CREATE INDEX IF NOT EXISTS "fpx_collect_book_ex_idx" ON "fpx_collect_book" (exchange_number);

CREATE INDEX IF NOT EXISTS "fpx_collect_book_mail_idx" ON "fpx_collect_book" (lower(buyer_email));

CREATE INDEX IF NOT EXISTS "fpx_collect_book_set_idx" ON "fpx_collect_book" (settled_at);
