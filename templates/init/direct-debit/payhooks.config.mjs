// @ts-check
// What `payhooks serve` runs besides your handlers (node_modules/payhooks/docs/configuration.md). Every key is
// optional; uncomment what you need.
export default {
  // The Postgres mirror of customers, invoices and payments (off by default when serve has --handlers).
  mirror: false,
  // reconcile: { every: '1h' }, // with PAYHOOKS_API_KEY: re-fetch what deliveries may have missed
  // forward: [{ name: 'erp', url: 'https://erp.example.com/inbound', secret: { env: 'ERP_FORWARD_SECRET' } }],
};
