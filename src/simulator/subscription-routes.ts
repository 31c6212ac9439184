import type { SimulatorContext } from './context.js';
import { subscriptionEventData } from './event-payloads.js';
import { newId } from './ids.js';
import { billItems, issueInvoice } from './issue-invoice.js';
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
        const now = new Date().toISOString();
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
        if (!subscription.isActive || subscription.nextCollectionDate === null) {
          throw conflict(`Subscription ${subscription.id} is ${subscription.status}; only an active subscription has a next collection.`);
        }
        const collectionDate = subscription.nextCollectionDate;
        const invoice = issueInvoice(ctx, {
          customerId: subscription.customerId,
          dueDate: collectionDate,
          collectionMethod: subscription.collectionMethod,
          items: subscription.items,
        });
        subscription.invoiceIds.push(invoice.id);
        subscription.lastCollectionDate = collectionDate;
        if (subscription.numberOfPayments !== null && subscription.invoiceIds.length >= subscription.numberOfPayments) {
          Object.assign(subscription, { status: 'COMPLETED', isActive: false, isCompleted: true, nextCollectionDate: null } as const);
        } else {
          subscription.nextCollectionDate = addMonths(subscription.firstCollectionDate, subscription.invoiceIds.length);
        }
        ctx.emit('SUBSCRIPTION_UPDATED', subscriptionEventData(state, subscription));
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
          canceledAt: new Date().toISOString(),
        } satisfies Partial<SimSubscription>);
        ctx.emit('SUBSCRIPTION_CANCELED', subscriptionEventData(state, subscription));
        return { status: 200, body: subscription };
      },
    }),
  ];
}

/**
 * `months` calendar months after `start` (UTC), on the same day, or the month's last day when it is shorter:
 * counted from the first date each time, so a subscription from January 31 collects on February 28, then March 31.
 */
export function addMonths(start: string, months: number): string {
  const date = new Date(start);
  const day = date.getUTCDate();
  const target = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + months, 1, 0, 0, 0, 0));
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  date.setUTCFullYear(target.getUTCFullYear(), target.getUTCMonth(), Math.min(day, lastDay));
  return date.toISOString();
}
