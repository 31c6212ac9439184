import type { SimulatorContext } from './context.js';
import { subscriptionEventData } from './event-payloads.js';
import { issueInvoice } from './issue-invoice.js';
import { conflict } from './route-error.js';
import type { SimInvoice, SimSubscription } from './state.js';

/**
 * Runs the next collection of an active subscription: issues its invoice, due on the collection date
 * (INVOICE_CREATED), and moves the schedule on a month, completing the subscription after its last payment
 * (SUBSCRIPTION_UPDATED). A subscription that is not active is a 409.
 */
export function cycleSubscription(ctx: SimulatorContext, subscription: SimSubscription): SimInvoice {
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
  ctx.emit('SUBSCRIPTION_UPDATED', subscriptionEventData(ctx.state, subscription));
  scheduleCollection(ctx, subscription);
  return invoice;
}

/**
 * On a manual clock, sets a timer at the subscription's next collection date that runs the collection, so that
 * advancing the clock a month collects once a month, as the service does. On the real clock collections run only
 * through the sandbox's cycle call: a month is too long to wait, and a collection due now would race the caller's
 * own cycle call. A timer whose collection was already run (by the sandbox call) does nothing.
 */
export function scheduleCollection(ctx: SimulatorContext, subscription: SimSubscription): void {
  const dueDate = subscription.nextCollectionDate;
  if (ctx.clock.mode !== 'manual' || !subscription.isActive || dueDate === null) return;
  ctx.clock.at(new Date(dueDate).getTime(), () => {
    if (subscription.isActive && subscription.nextCollectionDate === dueDate) cycleSubscription(ctx, subscription);
  });
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
