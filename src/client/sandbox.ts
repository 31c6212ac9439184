import {
  completePaymentInputSchema,
  completePaymentResponseSchema,
  type CompletePaymentInput,
  type CompletePaymentResponse,
} from '../events/rest-contract.js';
import { ApiResource } from './api-resource.js';
import { ApiInputError } from './errors.js';
import type { HttpTransport, RequestOptions } from './http-transport.js';

/** The staging sandbox: `POST /v1/sandbox/payments/{paymentId}/complete` (spec). */
export class Sandbox extends ApiResource {
  readonly #production: boolean;

  constructor(transport: HttpTransport, basePath: string, production: boolean) {
    super(transport, basePath);
    this.#production = production;
  }

  /**
   * Settles a pending `CASH` or `TRANSFER` payment in staging. Refused by the client itself, with no request
   * sent, when the client is for production or holds a `sk_live_` key.
   *
   * @example
   * const { payment } = await client.invoices.requestPayment(invoiceId, { paymentType: 'CASH' });
   * await client.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });
   */
  async completePayment(paymentId: string, input: CompletePaymentInput, options?: RequestOptions): Promise<CompletePaymentResponse> {
    if (this.#production)
      throw new ApiInputError('sandbox.completePayment works only in staging and this client is for production; no request was sent');
    return this.transport.post(
      this.at(paymentId, 'complete'),
      { schema: completePaymentInputSchema, value: input },
      completePaymentResponseSchema,
      options,
    );
  }
}
