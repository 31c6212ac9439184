import {
  customerPortalSessionInputSchema,
  signInUrlSchema,
  type CustomerPortalSessionInput,
  type SignInUrl,
} from '../events/rest-contract.js';
import { ApiResource } from './api-resource.js';
import type { RequestOptions } from './http-transport.js';

/** Customer portal sign-in: `POST /v1/customer-portal-session` (spec). */
export class CustomerPortal extends ApiResource {
  /**
   * A one-time URL that signs the customer into the portal at `destination` (`home` is the one value the
   * spec names; the others are passed through).
   *
   * @example
   * const { url } = await client.customerPortal.createSession({ destination: 'home', customerId });
   */
  async createSession(input: CustomerPortalSessionInput, options?: RequestOptions): Promise<SignInUrl> {
    return this.transport.post(this.basePath, { schema: customerPortalSessionInputSchema, value: input }, signInUrlSchema, options);
  }
}
