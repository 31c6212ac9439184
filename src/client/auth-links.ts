import { authLinkInputSchema, signInUrlSchema, type AuthLinkInput, type SignInUrl } from '../events/rest-contract.js';
import { ApiResource } from './api-resource.js';
import type { RequestOptions } from './http-transport.js';

/** One-time payment-portal sign-in links: `POST /v1/auth-links` (spec). */
export class AuthLinks extends ApiResource {
  /** A one-time URL that signs the customer into the payment portal, landing on `url` when given. */
  async create(input: AuthLinkInput, options?: RequestOptions): Promise<SignInUrl> {
    return this.transport.post(this.basePath, { schema: authLinkInputSchema, value: input }, signInUrlSchema, options);
  }
}
