// @ts-check
// `payhooks serve` reads this file from its working directory (node_modules/payhooks/docs/configuration.md).
import { crmConnector } from './crm-connector.mjs';

export default {
  // The Postgres mirror of customers, invoices and payments; the connector reads current state from it when there
  // is no PAYHOOKS_API_KEY.
  mirror: true,
  connectors: [crmConnector],
  // reconcile: { every: '1h' }, // with PAYHOOKS_API_KEY: re-fetch what deliveries may have missed
};
