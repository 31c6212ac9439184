import type { API_PATHS } from '../events/rest-contract.js';
import { AuthLinks } from './auth-links.js';
import { CustomerPortal } from './customer-portal.js';
import { Customers } from './customers.js';
import type { HttpTransport } from './http-transport.js';
import { Invoices } from './invoices.js';
import { Payments } from './payments.js';
import { Sandbox } from './sandbox.js';
import { WebhookEvents } from './webhook-events.js';
import { Webhooks } from './webhooks.js';

/** Which of the service's environments a client talks to. */
export type ClientEnvironment = 'staging' | 'production';

/** The base path of each resource group (see `API_PATHS` for the defaults). */
export type ApiPaths = { -readonly [Group in keyof typeof API_PATHS]: string };

/** The typed client of the Payment Collection Service's REST interface. Made by `createClient`. */
export class ApiClient {
  /** `staging` or `production`; sandbox calls are refused in production. */
  readonly environment: ClientEnvironment;
  /** The address requests go to, without a trailing slash. */
  readonly baseUrl: string;
  readonly customers: Customers;
  readonly invoices: Invoices;
  readonly payments: Payments;
  readonly sandbox: Sandbox;
  readonly webhooks: Webhooks;
  readonly webhookEvents: WebhookEvents;
  readonly customerPortal: CustomerPortal;
  readonly authLinks: AuthLinks;

  /** @internal Use `createClient`, which checks the options and settles the defaults. */
  constructor(
    transport: HttpTransport,
    settings: { environment: ClientEnvironment; baseUrl: string; paths: ApiPaths; sandboxAllowed: boolean },
  ) {
    const { paths } = settings;
    this.environment = settings.environment;
    this.baseUrl = settings.baseUrl;
    this.customers = new Customers(transport, paths.customers);
    this.invoices = new Invoices(transport, paths.invoices);
    this.payments = new Payments(transport, paths.payments);
    this.sandbox = new Sandbox(transport, paths.sandboxPayments, !settings.sandboxAllowed);
    this.webhooks = new Webhooks(transport, paths.webhooks);
    this.webhookEvents = new WebhookEvents(transport, paths.webhookEvents);
    this.customerPortal = new CustomerPortal(transport, paths.customerPortalSession);
    this.authLinks = new AuthLinks(transport, paths.authLinks);
  }
}
