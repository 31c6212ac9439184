/**
 * Headers in which a sender names a delivery: the webhook event record's id of the Payment Collection Service
 * (`X-Webhook-Event-Id`, sent by the simulator; the spec lists and retries webhook event records by this id), Standard
 * Webhooks' `webhook-id` and Svix's `svix-id`. Each is the same on every retry of one delivery. The receiver keeps
 * them with each event (receiver.ts), the ledger the first a delivery carries (`sender_id`, migrations/025), and
 * `findById` looks an operator's pasted id up by it.
 */
export const SENDER_ID_HEADERS = ['x-webhook-event-id', 'webhook-id', 'svix-id'] as const;

/** The id a sender gave a delivery: the first of {@link SENDER_ID_HEADERS} its kept headers carry, or null. */
export function senderIdOf(headers: Readonly<Record<string, string>> | undefined): string | null {
  for (const name of SENDER_ID_HEADERS) {
    const value = headers?.[name];
    if (typeof value === 'string') return value;
  }
  return null;
}
