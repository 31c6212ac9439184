// @ts-check
// A HubSpot connector for payhooks: customers become contacts, invoices become deals associated with their
// customer's contact. Plain JavaScript, so `npx payhooks serve` loads it with no build step (README.md).
import { DeadLetterError, defineConnector } from 'payhooks';

export const DEFAULT_BASE_URL = 'https://api.hubapi.com';

/** The default pipeline's stage for an invoice that is issued and waits for its money. */
export const OPEN_STAGE = 'contractsent';

const CUSTOMER_EVENTS = /** @type {const} */ (['CUSTOMER_CREATED', 'CUSTOMER_UPDATED', 'CUSTOMER_ARCHIVED']);
const INVOICE_EVENTS = /** @type {const} */ ([
  'INVOICE_CREATED',
  'INVOICE_UPDATED',
  'INVOICE_PAID',
  'INVOICE_PAID_OTHER',
  'INVOICE_CANCELED',
]);

/**
 * @typedef {{ baseUrl: string, token: string }} HubspotSettings
 * @typedef {import('payhooks').ConnectorContext} ConnectorContext
 * @typedef {(path: string, request?: import('payhooks').HttpRequest) => Promise<import('payhooks').HttpResponse>} Send
 */

/**
 * A connector that writes to the HubSpot account of `token` (a private app's access token with the contacts and
 * deals write scopes). `name` is where completion is recorded (`connector:<name>`): keep it once events ran.
 *
 * @param {{ baseUrl?: string, token: string, name?: string }} options
 */
export function hubspotConnector({ baseUrl = DEFAULT_BASE_URL, token, name = 'hubspot' }) {
  if (typeof token !== 'string' || token === '') throw new TypeError('hubspotConnector: token is required (a HubSpot access token).');
  const settings = { baseUrl: new URL(baseUrl).href.replace(/\/+$/, ''), token };
  return connectorWith(name, () => settings);
}

/**
 * HUBSPOT_BASE_URL and HUBSPOT_TOKEN, or a DeadLetterError naming what is missing: at load time it stops the
 * start, at run time it parks the event (nothing the worker retries can bring the variable back).
 */
function settingsFromEnv(env = process.env) {
  if (!env.HUBSPOT_TOKEN) {
    throw new DeadLetterError('HUBSPOT_TOKEN is not set: give the access token of a HubSpot private app (contacts and deals scopes).');
  }
  return { baseUrl: new URL(env.HUBSPOT_BASE_URL || DEFAULT_BASE_URL).href.replace(/\/+$/, ''), token: env.HUBSPOT_TOKEN };
}

/** The connector of the environment, checked now: a missing token throws here, at load. */
export function hubspotFromEnv(env = process.env) {
  const settings = settingsFromEnv(env);
  return connectorWith('hubspot', () => settings);
}

// Lazy on purpose: importing this module (for the factory, in a test or another configuration) must not depend on
// the environment. It reads the variables at each event; payhooks.config.mjs uses hubspotFromEnv to fail at start.
export default connectorWith('hubspot', () => settingsFromEnv());

/** @param {string} name @param {() => HubspotSettings} settingsOf */
function connectorWith(name, settingsOf) {
  return defineConnector({
    name,
    events: [...CUSTOMER_EVENTS, ...INVOICE_EVENTS],
    async handle(event, ctx) {
      const { baseUrl, token } = settingsOf();
      /** @type {Send} */
      const send = (path, request = {}) =>
        ctx.http.request(`${baseUrl}${path}`, { ...request, headers: { authorization: `Bearer ${token}`, ...request.headers } });
      const resource = await ctx.currentState();
      if (resource?.kind === 'customer') {
        const contact = contactProperties(resource.id, resource.state);
        await upsert(send, ctx, 'contacts', 'payhooks_customer_id', resource.id, { create: contact, update: contact });
        return;
      }
      if (resource?.kind !== 'invoice' || !('invoiceId' in event.data)) return;
      const invoice = resource.state;
      // The contact first: the deal's association needs it, and it is worth having even if the deal is refused.
      const embedded = event.data.customer;
      const embeddedId = text(embedded?.customerId) || text(embedded?.id);
      const customerId = text(invoice.customerId) || embeddedId;
      // The event's copy of the customer if it is the invoice's customer, else the API's when there is an API.
      const customer =
        embedded && embeddedId === customerId
          ? embedded
          : customerId && ctx.api
            ? await ctx.api.customers.get(customerId, { signal: ctx.signal })
            : null;
      // Created from this copy only when missing: the customer's own events keep it current, and an invoice's
      // copy may be older than what they wrote.
      const contactId = customerId
        ? await upsert(send, ctx, 'contacts', 'payhooks_customer_id', customerId, {
            create: customer ? contactProperties(customerId, customer) : null,
            update: null,
          })
        : null;
      const { stage, known } = dealStage(invoice, event.eventType);
      const deal = dealProperties(resource.id, invoice, stage);
      // A stage guessed from an open event's type must not reopen a deal a later event already closed.
      const { dealstage: _guess, ...unstaged } = deal;
      const dealId = await upsert(send, ctx, 'deals', 'payhooks_invoice_id', resource.id, {
        create: deal,
        update: known ? deal : unstaged,
      });
      if (contactId) await send(`/crm/v4/objects/deals/${dealId}/associations/default/contacts/${contactId}`, { method: 'PUT' });
      else ctx.logger.warn({ invoiceId: resource.id }, 'the invoice names no customer: its deal has no contact');
    },
  });
}

/**
 * The HubSpot id of the object whose unique `idProperty` is `idValue`: updated with `update` (only read when it is
 * null), created with `create` when there is none. HubSpot enforces the property's uniqueness, so two runs racing
 * to create end with one object: the loser gets a 409 and updates the winner's.
 *
 * @param {Send} send @param {ConnectorContext} ctx @param {'contacts' | 'deals'} type
 * @param {string} idProperty @param {string} idValue
 * @param {{ create: Record<string, string> | null, update: Record<string, string> | null }} properties
 */
async function upsert(send, ctx, type, idProperty, idValue, { create, update }) {
  const at = `/crm/v3/objects/${type}/${encodeURIComponent(idValue)}?idProperty=${idProperty}`;
  const existing = () => send(at, update ? { method: 'PATCH', json: { properties: update }, accept: [404] } : { accept: [404] });
  let found = await existing();
  if (found.status !== 404) return idOf(found);
  // Retried until the object's own events create it (an error, not a dead letter: that is usually a moment away).
  if (!create) throw new Error(`HubSpot has no ${type} with ${idProperty}=${idValue} yet, and this event cannot create it`);
  const created = await send(`/crm/v3/objects/${type}`, {
    method: 'POST',
    json: { properties: create },
    headers: { 'idempotency-key': `${ctx.idempotencyKey}-${type}` },
    accept: [409],
  });
  if (created.status !== 409) return idOf(created);
  found = await existing();
  if (found.status === 404) {
    throw new DeadLetterError(
      `HubSpot refused ${type} ${idProperty}=${idValue} as a duplicate of another record: ${created.text.slice(0, 300)}`,
    );
  }
  return idOf(found);
}

/** @param {import('payhooks').HttpResponse} response */
const idOf = (response) => /** @type {{ id: string }} */ (response.json()).id;

/** @param {unknown} value */
const text = (value) => (typeof value === 'string' ? value : '');

/** @param {string} customerId @param {Record<string, unknown>} customer */
function contactProperties(customerId, customer) {
  // An empty string clears the property in HubSpot, so a removed phone or name goes away there too.
  const [firstname = '', ...rest] = text(customer.name).trim().split(/\s+/);
  return {
    email: text(customer.email),
    firstname,
    lastname: rest.join(' '),
    phone: text(customer.phoneNumber),
    payhooks_customer_id: customerId,
  };
}

/**
 * The stage of an invoice's deal, and whether it is known. An API read (or a mirror row read from the API) carries
 * `isPaid` and `canceledAt`; an event's own snapshot does not, and then the event's type is the only hint.
 *
 * @param {Record<string, unknown>} invoice @param {string} eventType
 */
function dealStage(invoice, eventType) {
  if (typeof invoice.isPaid === 'boolean') {
    // Canceled first, as the mirror's status does: an invoice voided after payment is not a won deal.
    return { stage: invoice.canceledAt ? 'closedlost' : invoice.isPaid ? 'closedwon' : OPEN_STAGE, known: true };
  }
  if (eventType === 'INVOICE_CANCELED') return { stage: 'closedlost', known: true };
  if (eventType === 'INVOICE_PAID' || eventType === 'INVOICE_PAID_OTHER') return { stage: 'closedwon', known: true };
  return { stage: OPEN_STAGE, known: false };
}

/** @param {string} invoiceId @param {Record<string, unknown>} invoice @param {string} stage */
function dealProperties(invoiceId, invoice, stage) {
  const currency = text(invoice.currency);
  const closedAt = text(stage === 'closedwon' ? invoice.paidAt : stage === 'closedlost' ? invoice.canceledAt : null);
  return {
    dealname: text(invoice.description) || `Invoice ${invoiceId}`,
    amount: decimalAmount(invoice.amount, currency),
    deal_currency_code: currency,
    pipeline: 'default',
    dealstage: stage,
    payhooks_invoice_id: invoiceId,
    ...(closedAt ? { closedate: closedAt } : {}),
  };
}

/**
 * The service counts money in the currency's minor unit (cents for MXN); HubSpot wants a decimal amount. Done on
 * digits, not floats, with the currency's decimals from ICU (0 for JPY, 3 for KWD).
 *
 * @param {unknown} minor @param {string} currency
 */
export function decimalAmount(minor, currency) {
  if (typeof minor !== 'number' || !Number.isSafeInteger(minor)) {
    throw new DeadLetterError(`the invoice amount ${JSON.stringify(minor)} is not a whole number of minor units of ${currency}`);
  }
  const digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  const padded = String(Math.abs(minor)).padStart(digits + 1, '0');
  const whole = digits ? `${padded.slice(0, -digits)}.${padded.slice(-digits)}` : padded;
  return minor < 0 ? `-${whole}` : whole;
}
