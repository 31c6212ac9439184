import { apiCustomerSchema, createCustomerInputSchema, listPageSchema, pageQuerySchema } from '../events/rest-contract.js';
import { conflict } from './route-error.js';
import type { SimulatorContext } from './context.js';
import { customerEventData } from './event-payloads.js';
import { newId } from './ids.js';
import { page } from './paging.js';
import { defineRoute, type Route } from './route.js';
import type { SimCustomer } from './state.js';

const FIELD_NAMES = { username: 'username', email: 'email', phoneNumber: 'phone number' } as const;

/** `/v1/customers`: create (spec), list and read (assumed). Creating emits CUSTOMER_CREATED. */
export function customerRoutes(ctx: SimulatorContext): Route[] {
  const { state } = ctx;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/customers',
      operationId: 'createCustomer',
      summary: 'Create a customer; username, email and phone number must each be unique.',
      tag: 'Customers',
      input: createCustomerInputSchema,
      response: apiCustomerSchema,
      errors: [400, 409],
      handle({ input }) {
        const now = ctx.clock.iso();
        const customer: SimCustomer = {
          id: newId('cus'),
          name: input.name ?? null,
          email: input.email ?? null,
          phoneNumber: input.phoneNumber ?? null,
          username: input.username,
          metadata: input.metadata ?? [],
          meta: Object.fromEntries((input.metadata ?? []).map((pair) => [pair.key, pair.value])),
          createdAt: now,
          updatedAt: now,
          archivedAt: null,
        };
        const repeated = state.duplicateCustomerField(customer);
        if (repeated) throw conflict(`A customer with this ${FIELD_NAMES[repeated]} already exists (${repeated} must be unique).`);
        state.customers.set(customer.id, customer);
        ctx.emit('CUSTOMER_CREATED', customerEventData(customer));
        return { status: 200, body: customer };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/customers',
      operationId: 'listCustomers',
      summary: 'List customers, oldest first (assumed read).',
      tag: 'Customers',
      query: pageQuerySchema,
      response: listPageSchema(apiCustomerSchema),
      errors: [400],
      handle: ({ query }) => ({ status: 200, body: page([...state.customers.values()], query) }),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/customers/{customerId}',
      operationId: 'getCustomer',
      summary: 'Read a customer (assumed read).',
      tag: 'Customers',
      response: apiCustomerSchema,
      errors: [404],
      handle: ({ params }) => ({ status: 200, body: state.customer(params.customerId!) }),
    }),
  ];
}
