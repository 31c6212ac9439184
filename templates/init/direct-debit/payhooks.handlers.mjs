// @ts-check
// The direct-debit templates (node_modules/payhooks/handlers/direct-debit/README.md): mandates, collections
// reconciled against what you expected, failed attempts with your dunning, subscriptions, disputes and refunds,
// each written once to the `direct_debit` schema. `payhooks serve --handlers payhooks.handlers.mjs` calls this.
// To change a template's behaviour, copy node_modules/payhooks/handlers/direct-debit/ into your project and
// import from the copy instead.
import { dunningDecision, registerDirectDebit } from 'payhooks/handlers/direct-debit';

/** @param {import('payhooks').Payhooks<import('payhooks/client').ApiClient>} hooks */
export default async function register(hooks) {
  await registerDirectDebit(hooks, {
    // Called once per failed collection attempt, in the transaction that records it: if it throws, nothing is
    // recorded and the event is retried, so key any email or job it starts by failure.attemptId.
    dunning: async (failure, ctx) => {
      const next = dunningDecision(failure, { retryAfterDays: [3, 5, 7], suspendAfter: 3 });
      // TODO: schedule the retry or suspend the customer in your app.
      ctx.logger.info(
        { paymentId: failure.paymentId, attemptNumber: failure.attemptNumber, errorCode: failure.errorCode, next: next.action },
        next.action === 'retry' ? `collection failed: retry on ${next.retryAt.toISOString().slice(0, 10)}` : 'collection failed: suspend',
      );
    },
  });
}
