import type { SimulatorContext } from './context.js';
import { invoiceEventData } from './event-payloads.js';
import { newId } from './ids.js';
import { badRequest } from './route-error.js';
import type { SimConcept, SimInvoice, SimInvoiceItem } from './state.js';

/** A concept given inline in an item (`{displayName, amount, currency}`). */
export interface InlineConcept {
  displayName: string;
  amount: number;
  currency: string;
}

/** One item to bill: an existing concept by id, or a concept given inline (created on the way). */
export interface ItemToBill {
  quantity: number;
  conceptId?: string | undefined;
  concept?: InlineConcept | undefined;
}

/**
 * Looks up or creates the concepts of `items` and returns the invoice lines. Everything is checked before a
 * concept is created, so refused items leave nothing behind (404 for an unknown concept, 400 for mixed currencies).
 */
export function billItems(
  ctx: SimulatorContext,
  items: readonly ItemToBill[],
  options: { oneOff: boolean; what: 'an invoice' | 'a subscription' },
): SimInvoiceItem[] {
  const now = ctx.clock.iso();
  const resolved = items.map((item) => ({
    quantity: item.quantity,
    existing: item.conceptId === undefined ? undefined : ctx.state.concept(item.conceptId),
    inline: item.concept,
  }));
  const currencies = new Set(resolved.map((item) => (item.existing ?? item.inline)!.currency));
  if (currencies.size > 1) throw badRequest(`All items of ${options.what} must share one currency; got ${[...currencies].join(', ')}.`);
  return resolved.map((item) => {
    const concept = item.existing ?? createConcept(ctx, item.inline!, now, options.oneOff);
    return {
      description: concept.displayName,
      amount: concept.amount,
      currency: concept.currency,
      quantity: item.quantity,
      conceptId: concept.id,
    };
  });
}

/**
 * Stores a new unpaid invoice for the customer and emits INVOICE_CREATED; an invoice whose total is zero is
 * settled at once and INVOICE_PAID follows (the spec's third state rule). The customer must exist (404).
 */
export function issueInvoice(
  ctx: SimulatorContext,
  input: {
    customerId: string;
    dueDate: string;
    collectionMethod?: string | undefined;
    items: readonly SimInvoiceItem[];
    description?: string | undefined;
    metadata?: readonly { key: string; value: string }[] | undefined;
  },
): SimInvoice {
  const customer = ctx.state.customer(input.customerId);
  const now = ctx.clock.iso();
  const items = structuredClone([...input.items]);
  const invoice: SimInvoice = {
    id: newId('inv'),
    amount: items.reduce((sum, item) => sum + item.amount * item.quantity, 0),
    currency: items[0]!.currency,
    dueDate: input.dueDate,
    expireDate: null,
    items,
    metadata: (input.metadata ?? []).map((pair) => ({ ...pair })),
    meta: Object.fromEntries((input.metadata ?? []).map((pair) => [pair.key, pair.value])),
    customerId: customer.id,
    description: input.description ?? null,
    collectionMethod: input.collectionMethod ?? 'AUTOMATIC',
    isPaid: false,
    paidAt: null,
    canceledAt: null,
    createdAt: now,
  };
  ctx.state.invoices.set(invoice.id, invoice);
  ctx.emit('INVOICE_CREATED', invoiceEventData(ctx.state, 'INVOICE_CREATED', invoice));
  if (invoice.amount === 0) {
    // The spec's third rule: nothing to collect, so the invoice is settled as it is created.
    invoice.isPaid = true;
    invoice.paidAt = now;
    ctx.emit('INVOICE_PAID', invoiceEventData(ctx.state, 'INVOICE_PAID', invoice));
  }
  return invoice;
}

function createConcept(ctx: SimulatorContext, inline: InlineConcept, now: string, oneOff: boolean): SimConcept {
  const concept: SimConcept = {
    id: newId('con'),
    createdAt: now,
    updatedAt: now,
    amount: inline.amount,
    currency: inline.currency,
    displayName: inline.displayName,
    description: null,
    sku: null,
    organizationId: ctx.state.organization.id,
    active: true,
    recurrentDetailId: null,
    amountEditable: false,
    quantityEditable: false,
    archivedAt: null,
    archivedById: null,
    oneOff,
    groupId: null,
    createdById: null,
    updatedById: null,
    group: null,
    metadata: [],
    meta: {},
  };
  ctx.state.concepts.set(concept.id, concept);
  return concept;
}
