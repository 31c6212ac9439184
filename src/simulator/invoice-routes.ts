import {
  apiInvoiceSchema,
  createInvoiceInputSchema,
  listPageSchema,
  markPaidInputSchema,
  markPaidResponseSchema,
  pageQuerySchema,
} from '../events/rest-contract.js';
import { badRequest, conflict } from './route-error.js';
import type { SimulatorContext } from './context.js';
import { invoiceEventData, paymentCompletedEventData } from './event-payloads.js';
import { newId } from './ids.js';
import { page } from './paging.js';
import { defineRoute, type Route } from './route.js';
import type { SimConcept, SimInvoice, SimPayment } from './state.js';

/**
 * `/v1/invoices`: create and list (spec), read (assumed), mark-paid (spec). Creating emits INVOICE_CREATED,
 * and INVOICE_PAID at once when the total is zero; mark-paid records an `OTHER` payment and emits
 * INVOICE_PAID_OTHER and PAYMENT_COMPLETED.
 */
export function invoiceRoutes(ctx: SimulatorContext): Route[] {
  const { state } = ctx;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/invoices',
      operationId: 'createInvoice',
      summary: 'Create an invoice (payment request) for a customer; concepts given inline are created.',
      tag: 'Invoices',
      input: createInvoiceInputSchema,
      response: apiInvoiceSchema,
      errors: [400, 404],
      handle({ input }) {
        const customer = state.customer(input.customerId);
        const now = new Date().toISOString();
        // Look everything up and check it before creating anything, so a refused invoice leaves no concepts behind.
        const resolved = input.items.map((item) => ({
          quantity: item.quantity,
          existing: item.conceptId === undefined ? undefined : state.concept(item.conceptId),
          inline: item.concept,
        }));
        const currencies = new Set(resolved.map((item) => (item.existing ?? item.inline)!.currency));
        if (currencies.size > 1) throw badRequest(`All items of an invoice must share one currency; got ${[...currencies].join(', ')}.`);
        const items = resolved.map((item) => {
          const concept = item.existing ?? createConcept(ctx, item.inline!, now);
          return {
            description: concept.displayName,
            amount: concept.amount,
            currency: concept.currency,
            quantity: item.quantity,
            conceptId: concept.id,
          };
        });
        const invoice: SimInvoice = {
          id: newId('inv'),
          amount: items.reduce((sum, item) => sum + item.amount * item.quantity, 0),
          currency: items[0]!.currency,
          dueDate: input.dueDate,
          expireDate: null,
          items,
          metadata: [],
          meta: {},
          customerId: customer.id,
          description: null,
          collectionMethod: input.collectionMethod ?? 'AUTOMATIC',
          isPaid: false,
          paidAt: null,
          canceledAt: null,
          createdAt: now,
        };
        state.invoices.set(invoice.id, invoice);
        ctx.emit('INVOICE_CREATED', invoiceEventData(state, 'INVOICE_CREATED', invoice));
        if (invoice.amount === 0) {
          // The spec's third rule: nothing to collect, so the invoice is settled as it is created.
          invoice.isPaid = true;
          invoice.paidAt = now;
          ctx.emit('INVOICE_PAID', invoiceEventData(state, 'INVOICE_PAID', invoice));
        }
        return { status: 200, body: invoice };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/invoices',
      operationId: 'listInvoices',
      summary: 'List invoices, oldest first.',
      tag: 'Invoices',
      query: pageQuerySchema,
      response: listPageSchema(apiInvoiceSchema),
      errors: [400],
      handle: ({ query }) => ({ status: 200, body: page([...state.invoices.values()], query) }),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/invoices/{invoiceId}',
      operationId: 'getInvoice',
      summary: 'Read an invoice, with isPaid and paidAt (assumed read).',
      tag: 'Invoices',
      response: apiInvoiceSchema,
      errors: [404],
      handle: ({ params }) => ({ status: 200, body: state.invoice(params.invoiceId!) }),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/invoices/{invoiceId}/mark-paid',
      operationId: 'markInvoicePaid',
      summary: 'Record that the invoice was paid outside the service: creates an OTHER payment.',
      tag: 'Invoices',
      input: markPaidInputSchema,
      inputOptional: true,
      response: markPaidResponseSchema,
      errors: [400, 404, 409],
      handle({ params, input }) {
        const invoice = state.invoice(params.invoiceId!);
        assertPayable(invoice);
        const now = new Date().toISOString();
        const payment: SimPayment = {
          id: newId('pay'),
          amount: invoice.amount,
          currency: invoice.currency,
          paymentTime: input.paymentTime ?? now,
          type: 'OTHER',
          status: 'SUCCEEDED',
          isCompleted: true,
          authorizationCode: null,
          cardDetail: null,
          metadata: [],
          meta: {},
          invoiceId: invoice.id,
          createdAt: now,
        };
        state.payments.set(payment.id, payment);
        invoice.isPaid = true;
        invoice.paidAt = now;
        const paidOther = invoiceEventData(state, 'INVOICE_PAID_OTHER', invoice, payment);
        ctx.emit('INVOICE_PAID_OTHER', input.description ? { ...paidOther, description: input.description } : paidOther);
        ctx.emit('PAYMENT_COMPLETED', paymentCompletedEventData(state, payment, null));
        return { status: 200, body: { invoice, payment } };
      },
    }),
  ];
}

/** 409 unless the invoice can still be paid. */
export function assertPayable(invoice: SimInvoice): void {
  if (invoice.isPaid) throw conflict(`Invoice ${invoice.id} is already paid.`);
  if (invoice.canceledAt !== null) throw conflict(`Invoice ${invoice.id} is canceled.`);
}

function createConcept(ctx: SimulatorContext, inline: { displayName: string; amount: number; currency: string }, now: string): SimConcept {
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
    oneOff: true,
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
