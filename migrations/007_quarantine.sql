-- A quarantine for signed, authentic deliveries that cannot be stored as events (issue 24, item 4).
--
-- Before, such a delivery (a U+0000 in its eventId, an id over the index limit, a body that is not UTF-8 or not
-- JSON, …) was answered 400 and kept nowhere: after the sender's four days of retries it was gone without a trace.
-- Now its exact bytes, its headers and the reason are kept here until an operator releases it (re-parsed and
-- queued as an event) or discards it. See docs/receiver.md#quarantine.

CREATE TABLE quarantine (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  received_at        timestamptz NOT NULL DEFAULT now(),
  last_received_at   timestamptz NOT NULL DEFAULT now(),
  -- Deliveries of these same bytes: a repeat is counted here, not kept again.
  deliveries         integer NOT NULL DEFAULT 1,
  -- Which check refused it (docs/receiver.md#quarantine lists them and what releases each).
  kind               text NOT NULL
                     CHECK (kind IN ('not_utf8', 'not_json', 'not_envelope', 'unstorable_resource', 'unstorable_event')),
  reason             text NOT NULL,
  -- The eventId and type when they could be read and are storable text (for lists); null otherwise.
  event_id           text,
  event_type         text,
  -- The body exactly as signed: bytea, since it may not be UTF-8 at all.
  raw_body           bytea NOT NULL,
  -- The kept headers as JSON text (escaped by JSON.stringify): jsonb would refuse the U+0000 or lone surrogate that
  -- may be the very reason for the quarantine.
  headers            text NOT NULL,
  -- Identifies a repeat of the same bytes.
  body_sha256        bytea NOT NULL UNIQUE,
  -- held until an operator acts; released (stored as the event released_event_id) or discarded. Rows stay, so a
  -- repeat of a released or discarded delivery is answered as it was, not quarantined again.
  state              text NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'released', 'discarded')),
  released_event_id  text,
  resolved_at        timestamptz
);

CREATE INDEX quarantine_held_idx ON quarantine (id) WHERE state = 'held';
