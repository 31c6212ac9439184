import type { SimulatorContext } from './context.js';
import { subscriptionEventData } from './event-payloads.js';
import { newId } from './ids.js';
import { addMonths, cycleSubscription, scheduleCollection } from './collections.js';
import { billItems } from './issue-invoice.js';
import { conflict } from './route-error.js';
import { defineRoute, type Route } from './route.js';
import { sandboxCreateSubscriptionInputSchema, sandboxCycleResponseSchema, sandboxSubscriptionSchema } from './sandbox-contract.js';
import type { SimSubscription } from './state.js';

/**
 * Simulator only: subscriptions, `ACTIVE → COMPLETED | CANCELED` (assumed state names), one collection a month.
 * Create (SUBSCRIPTION_CREATED); run the next cycle, which issues that collection's invoice (INVOICE_CREATED)
 * and moves the schedule on (SUBSCRIPTION_UPDATED); cancel (SUBSCRIPTION_CANCELED). The invoice a cycle issues
 * is paid like any other (a CASH or TRANSFER payment and the sandbox completion, or mark-paid). The spec shows
 * the Subscriptions area but none of its calls.
 */
export function subscriptionRoutes(ctx: SimulatorContext): Route[] {
  const { state } = ctx;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/subscriptions',
      operationId: 'createSandboxSubscription',
      summary:
        'Simulator only (assumed, not in the spec): subscribe a customer to items collected once a month from firstCollectionDate (default now), numberOfPayments times or until canceled. Emits SUBSCRIPTION_CREATED.',
      tag: 'Sandbox',
      stagingOnly: true,
      input: sandboxCreateSubscriptionInputSchema,
      response: sandboxSubscriptionSchema,
      errors: [400, 403, 404],
      handle({ input }) {
        const customer = state.customer(input.customerId);
        const items = billItems(ctx, input.items, { oneOff: false, what: 'a subscription' });
        const now = ctx.clock.iso();
        const first = input.firstCollectionDate ?? now;
        const subscription: SimSubscription = {
          id: newId('sub'),
          description: input.description ?? null,
          status: 'ACTIVE',
          isActive: true,
          isCompleted: false,
          firstCollectionDate: first,
          lastCollectionDate: null,
          nextCollectionDate: first,
          numberOfPayments: input.numberOfPayments ?? null,
          collectionMethod: input.collectionMethod ?? 'AUTOMATIC',
          onlyAutomaticCollection: input.onlyAutomaticCollection ?? false,
          items,
          metadata: [],
          meta: {},
          customerId: customer.id,
          invoiceIds: [],
          createdAt: now,
          canceledAt: null,
        };
        state.subscriptions.set(subscription.id, subscription);
        ctx.emit('SUBSCRIPTION_CREATED', subscriptionEventData(state, subscription));
        scheduleCollection(ctx, subscription);
        return { status: 200, body: subscription };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/subscriptions/{subscriptionId}/cycle',
      operationId: 'cycleSandboxSubscription',
      summary:
        'Simulator only (assumed, not in the spec): run the next collection of an active subscription now: issue its invoice, due on the collection date (INVOICE_CREATED), and move the schedule on a month, completing the subscription after its last payment (SUBSCRIPTION_UPDATED).',
      tag: 'Sandbox',
      stagingOnly: true,
      response: sandboxCycleResponseSchema,
      errors: [403, 404, 409],
      handle({ params }) {
        const subscription = state.subscription(params.subscriptionId!);
        const invoice = cycleSubscription(ctx, subscription);
        return { status: 200, body: { subscription, invoice } };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/subscriptions/{subscriptionId}/cancel',
      operationId: 'cancelSandboxSubscription',
      summary:
        'Simulator only (assumed, not in the spec): cancel an active subscription; no further collections. Invoices already issued stay as they are. Emits SUBSCRIPTION_CANCELED.',
      tag: 'Sandbox',
      stagingOnly: true,
      response: sandboxSubscriptionSchema,
      errors: [403, 404, 409],
      handle({ params }) {
        const subscription = state.subscription(params.subscriptionId!);
        if (!subscription.isActive) throw conflict(`Subscription ${subscription.id} is already ${subscription.status}.`);
        Object.assign(subscription, {
          status: 'CANCELED',
          isActive: false,
          nextCollectionDate: null,
          canceledAt: ctx.clock.iso(),
        } satisfies Partial<SimSubscription>);
        ctx.emit('SUBSCRIPTION_CANCELED', subscriptionEventData(state, subscription));
        return { status: 200, body: subscription };
      },
    }),
  ];
}

/** Kept here for the callers that import it from this module. */
export { addMonths };
