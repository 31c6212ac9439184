import type { SimulatorContext } from './context.js';
import { customerEventData } from './event-payloads.js';
import { newId } from './ids.js';
import { conflict } from './route-error.js';
import { defineRoute, type Route } from './route.js';
import { sandboxPaymentMethodSchema, sandboxSavePaymentMethodInputSchema } from './sandbox-contract.js';
import type { SimPaymentMethod } from './state.js';

/** The bank of a CLABE's first three digits, for the few the simulator names (assumed; any other is "Banco"). */
const BANKS: Record<string, string> = { '002': 'Banamex', '012': 'BBVA México', '014': 'Santander', '072': 'Banorte' };

/**
 * Simulator only: a customer saves a card or a bank account for direct debit, confirmed, with charges consented
 * unless said otherwise. Emits PAYMENT_METHOD_CREATED. The spec lists the event but shows no call that causes it.
 */
export function paymentMethodRoutes(ctx: SimulatorContext): Route[] {
  const { state } = ctx;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/customers/{customerId}/payment-methods',
      operationId: 'saveSandboxPaymentMethod',
      summary:
        'Simulator only (assumed, not in the spec): the customer saves a CARD or a BANK_ACCOUNT (CLABE) for direct debit; only masked details are kept. Emits PAYMENT_METHOD_CREATED.',
      tag: 'Sandbox',
      stagingOnly: true,
      input: sandboxSavePaymentMethodInputSchema,
      response: sandboxPaymentMethodSchema,
      errors: [400, 403, 404, 409],
      handle({ params, input }) {
        const customer = state.customer(params.customerId!);
        if (customer.archivedAt) throw conflict(`Customer ${customer.id} is archived; it cannot save a payment method.`);
        const method: SimPaymentMethod = {
          id: newId('pm'),
          type: input.type,
          confirmed: true,
          chargesConsented: input.chargesConsented ?? true,
          cardDetail:
            input.type === 'CARD'
              ? {
                  id: newId('card'),
                  cardholder: input.cardholder ?? customer.name,
                  last4: input.last4 ?? '4242',
                  brand: input.brand ?? 'VISA',
                  expiryMonth: input.expiryMonth ?? 12,
                  expiryYear: input.expiryYear ?? new Date(ctx.clock.now()).getUTCFullYear() + 3,
                  funding: 'DEBIT',
                  issuer: null,
                  country: 'MX',
                }
              : null,
          bankAccount:
            input.type === 'BANK_ACCOUNT'
              ? {
                  id: newId('bank'),
                  clabeFirst: input.clabe.slice(0, 3),
                  clabeLast: input.clabe.slice(-4),
                  bankCode: input.clabe.slice(0, 3),
                  bankName: input.bankName ?? BANKS[input.clabe.slice(0, 3)] ?? 'Banco',
                  verified: true,
                }
              : null,
          customerId: customer.id,
          createdAt: ctx.clock.iso(),
        };
        state.paymentMethods.set(method.id, method);
        const { customerId: _customerId, createdAt: _createdAt, ...paymentMethod } = method;
        ctx.emit('PAYMENT_METHOD_CREATED', structuredClone({ paymentMethod, customer: customerEventData(customer) }));
        return { status: 200, body: method };
      },
    }),
  ];
}
