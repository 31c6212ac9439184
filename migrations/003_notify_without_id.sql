-- The new-event notification carries no payload. It used to carry the eventId, and NOTIFY refuses payloads over
-- 8,000 bytes, so a long id made the insert fail. Without a payload, Postgres also folds the notifications of one
-- transaction into one, so a batch of rows wakes listeners once. Listeners only need to know "look now".
CREATE OR REPLACE FUNCTION notify_new_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_TABLE_SCHEMA || '_new_event', '');
  RETURN NULL;
END;
$$;
