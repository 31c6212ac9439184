// @ts-check
// Read by `npx payhooks serve` in this folder (see README.md).
import { hubspotFromEnv } from './hubspot-connector.mjs';

// Checked here, at start: without HUBSPOT_TOKEN serve stops with the reason instead of parking every event.
const hubspot = hubspotFromEnv();

export default {
  // Off: with PAYHOOKS_API_KEY the connector reads current state from the API, which is all it needs, and serve
  // then runs nothing but the connector. Turn it on to keep the service's data in Postgres tables as well.
  mirror: false,
  connectors: [hubspot],
};
