// @ts-check
// Your handlers: `payhooks serve --handlers payhooks.handlers.mjs` imports this file and calls the default export
// with the payhooks instance before it starts. Each handler runs once per event (a duplicate delivery is stored
// once); when it throws, the event is retried with backoff and, after the last attempt, kept as `dead` for
// `payhooks replay`. Event types and their fields: node_modules/payhooks/docs/event-reference.md.

/** @param {import('payhooks').Payhooks<import('payhooks/client').ApiClient>} hooks */
export default function register(hooks) {
  hooks.on(
    ['INVOICE_PAID', 'PAYMENT_COMPLETED'],
    async (event, ctx) => {
      // Events arrive in any order and may be old: with PAYHOOKS_API_KEY set, read the invoice as it is now.
      const invoiceIds = event.eventType === 'INVOICE_PAID' ? [event.data.invoiceId] : event.data.relatedInvoices.map((invoice) => invoice.id);
      for (const invoiceId of invoiceIds) {
        const invoice = ctx.api ? await ctx.api.invoices.get(invoiceId, { signal: ctx.signal }) : undefined;
        // Ids and amounts only: customers' emails and phone numbers do not belong in logs.
        ctx.logger.info({ invoiceId, paid: invoice?.isPaid ?? 'unknown without PAYHOOKS_API_KEY' }, `${event.eventType}: invoice paid`);
        // TODO: mark the order of `invoiceId` paid in your database, inside ctx.transaction so it happens once.
      }
    },
    // Completion is recorded under this name: keep it when you rename the function or add event types.
    { name: 'invoice-paid' },
  );
}
