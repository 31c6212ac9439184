import { apiPaymentSchema, type ApiPayment } from '../events/rest-contract.js';
import { ApiResource } from './api-resource.js';
import type { RequestOptions } from './http-transport.js';

/** Payments: `GET /v1/payments/{id}` (assumed; the spec shows no payment reads, handlers need one). */
export class Payments extends ApiResource {
  /** Reads one payment's current state. */
  async get(paymentId: string, options?: RequestOptions): Promise<ApiPayment> {
    return this.transport.get(this.at(paymentId), apiPaymentSchema, options);
  }
}
