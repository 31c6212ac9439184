import {
  apiInvoiceSchema,
  createInvoiceInputSchema,
  listPageSchema,
  markPaidInputSchema,
  markPaidResponseSchema,
  pageQuerySchema,
} from '../events/rest-contract.js';
import { conflict } from './route-error.js';
import type { SimulatorContext } from './context.js';
import { invoiceEventData, paymentCompletedEventData } from './event-payloads.js';
import { newId } from './ids.js';
import { billItems, issueInvoice } from './issue-invoice.js';
import { page } from './paging.js';
import { defineRoute, type Route } from './route.js';
import type { SimInvoice, SimPayment } from './state.js';

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
        state.customer(input.customerId); // first, so that an unknown customer leaves no concepts behind
        const items = billItems(ctx, input.items, { oneOff: true, what: 'an invoice' });
        const invoice = issueInvoice(ctx, {
          customerId: input.customerId,
          dueDate: input.dueDate,
          collectionMethod: input.collectionMethod,
          items,
          description: input.description,
          metadata: input.metadata,
        });
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
        const now = ctx.clock.iso();
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
