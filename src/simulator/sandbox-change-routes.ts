import { apiCustomerSchema, apiInvoiceSchema } from '../events/rest-contract.js';
import type { SimulatorContext } from './context.js';
import { customerEventData, invoiceEventData } from './event-payloads.js';
import { conflict } from './route-error.js';
import { defineRoute, type Route } from './route.js';
import { sandboxUpdateCustomerInputSchema } from './sandbox-contract.js';

/**
 * Simulator only: the changes the service makes on its own side that no REST call of the spec causes, so that
 * their events (CUSTOMER_UPDATED, INVOICE_CANCELED) can be caused through the simulator's state: a customer
 * edited in the service's dashboard, an invoice canceled there.
 */
export function sandboxChangeRoutes(ctx: SimulatorContext): Route[] {
  const { state } = ctx;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/customers/{customerId}/update',
      operationId: 'updateSandboxCustomer',
      summary:
        "Simulator only (assumed, not in the spec): change a customer's name or email as the service's dashboard would; emits CUSTOMER_UPDATED.",
      tag: 'Sandbox',
      stagingOnly: true,
      input: sandboxUpdateCustomerInputSchema,
      response: apiCustomerSchema,
      errors: [400, 403, 404],
      handle({ params, input }) {
        const customer = state.customer(params.customerId!);
        if (input.name !== undefined) customer.name = input.name;
        if (input.email !== undefined) customer.email = input.email;
        customer.updatedAt = ctx.clock.iso();
        ctx.emit('CUSTOMER_UPDATED', customerEventData(customer));
        return { status: 200, body: customer };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/invoices/{invoiceId}/cancel',
      operationId: 'cancelSandboxInvoice',
      summary:
        "Simulator only (assumed, not in the spec): cancel an unpaid invoice as the service's dashboard would; emits INVOICE_CANCELED.",
      tag: 'Sandbox',
      stagingOnly: true,
      response: apiInvoiceSchema,
      errors: [403, 404, 409],
      handle({ params }) {
        const invoice = state.invoice(params.invoiceId!);
        if (invoice.isPaid) throw conflict(`Invoice ${invoice.id} is paid and cannot be canceled.`);
        if (invoice.canceledAt !== null) throw conflict(`Invoice ${invoice.id} is already canceled.`);
        invoice.canceledAt = ctx.clock.iso();
        ctx.emit('INVOICE_CANCELED', invoiceEventData(state, 'INVOICE_CANCELED', invoice));
        return { status: 200, body: invoice };
      },
    }),
  ];
}
