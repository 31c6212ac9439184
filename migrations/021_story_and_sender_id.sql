-- The operator's lookups over the whole history (issue 50): a resource's story and an event found by the id its
-- sender gave it.
--
-- A resource's story (`payhooks events history invoice:inv_1`, the console's story view) reads every event of one
-- resource key in order of arrival. The history had no index on resource_key (the queue's serve the worker, and
-- hold only unfinished events), so the story of one customer read every stored event: about 100 ms for 100,000
-- events on the test machine, growing with the history. Partial: events that name no resource cost nothing.
CREATE INDEX inbox_events_resource_seq_idx ON inbox_events (resource_key, seq) WHERE resource_key IS NOT NULL;

-- The id a sender gives the delivery in its headers, when it gives one: the webhook event record's id
-- (X-Webhook-Event-Id, what the service's dashboard and API list), Standard Webhooks' webhook-id, or Svix's svix-id.
-- Each is the same on every retry of the delivery. The expression is the one src/store/find-by-id.ts queries (the
-- names in SENDER_ID_HEADERS, in this order); partial, so that deliveries without such a header cost nothing.
CREATE INDEX inbox_events_sender_id_idx
  ON inbox_events ((coalesce(headers ->> 'x-webhook-event-id', headers ->> 'webhook-id', headers ->> 'svix-id')))
  WHERE coalesce(headers ->> 'x-webhook-event-id', headers ->> 'webhook-id', headers ->> 'svix-id') IS NOT NULL;
