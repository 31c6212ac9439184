import type { SignatureScheme } from '../../src/signature/index.js';

/** A delivery as the sender would post it: the body text and its signed headers. */
export interface Delivery {
  body: string;
  headers: Record<string, string>;
}

/** Signs an envelope (or a raw body string) with `scheme`, as the service would. */
export function signedDelivery(
  scheme: SignatureScheme,
  envelope: object | string,
  options: { timestamp?: number; webhookId?: string } = {},
): Delivery {
  const body = typeof envelope === 'string' ? envelope : JSON.stringify(envelope);
  const headers = scheme.sign({ rawBody: body, timestamp: options.timestamp, webhookId: options.webhookId });
  return { body, headers: { 'content-type': 'application/json', ...headers } };
}

/** POSTs a delivery to a URL and returns the status and parsed JSON answer. */
export async function post(url: string, delivery: Delivery): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body };
}

/** A minimal, realistic envelope with a fresh id. */
export function envelope(
  eventId: string,
  eventType = 'CUSTOMER_CREATED',
): { eventId: string; eventType: string; data: Record<string, unknown> } {
  return {
    eventId,
    eventType,
    data: { id: 'cus_1', name: null, email: null, phoneNumber: null, username: 'u1', metadata: [], meta: {} },
  };
}
