// The sync service's configuration (docs/configuration.md#the-sync-configuration-file). start.ts hands it to
// `payhooks serve` through PAYHOOKS_CONFIG; in a deployment, put it beside serve as payhooks.config.mjs.
export default {
  // serve without --handlers runs the mirror anyway; saying so keeps it on if handlers are added later.
  mirror: true,
  forward: [
    {
      // Completion is recorded under forward:erp: keep the name when the URL changes.
      name: 'erp',
      url: process.env.ERP_INBOX_URL ?? 'http://127.0.0.1:8788/inbound',
      // The ERP's own secret, not the service's: read from the environment when serve starts.
      secret: { env: 'ERP_FORWARD_SECRET' },
      // The ERP books money; customers and open invoices stay in the mirror.
      eventTypes: ['INVOICE_PAID', 'INVOICE_PAID_OTHER', 'PAYMENT_COMPLETED', 'PAYMENT_REFUNDED'],
      timeout: '5s',
    },
  ],
};
