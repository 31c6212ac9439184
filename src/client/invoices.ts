import {
  apiInvoiceSchema,
  createInvoiceInputSchema,
  markPaidInputSchema,
  markPaidResponseSchema,
  pageQuerySchema,
  requestPaymentInputSchema,
  requestPaymentResponseSchema,
  type ApiInvoice,
  type CreateInvoiceInput,
  type ListPage,
  type MarkPaidInput,
  type MarkPaidResponse,
  type PageQuery,
  type RequestPaymentInput,
  type RequestPaymentResponse,
} from '../events/rest-contract.js';
import { ApiResource } from './api-resource.js';
import type { RequestOptions } from './http-transport.js';
import { iteratePages } from './pagination.js';

/** Invoices (payment requests): list, create, payments and mark-paid (spec); `GET /v1/invoices/{id}` (assumed). */
export class Invoices extends ApiResource {
  /** One page of invoices (`GET /v1/invoices`); `take` 1 to 100. */
  async list(query: PageQuery = {}, options?: RequestOptions): Promise<ListPage<ApiInvoice>> {
    return this.transport.list(this.basePath, apiInvoiceSchema, { schema: pageQuerySchema, value: query }, options);
  }

  /**
   * Every invoice from `skip` on, 100 per request.
   *
   * @example
   * for await (const invoice of client.invoices.iterate()) console.log(invoice.id, invoice.amount);
   */
  iterate(query: Omit<PageQuery, 'take'> = {}, options?: RequestOptions): AsyncGenerator<ApiInvoice, void, undefined> {
    return iteratePages((page) => this.list(page, options), query.skip);
  }

  /**
   * Creates an invoice (`POST /v1/invoices`).
   *
   * @example
   * await client.invoices.create({ customerId, dueDate: '2026-11-30T06:00:00Z', items: [{ quantity: 1, concept: { displayName: 'Tuition', amount: 250000, currency: 'MXN' } }] });
   */
  async create(input: CreateInvoiceInput, options?: RequestOptions): Promise<ApiInvoice> {
    return this.transport.post(this.basePath, { schema: createInvoiceInputSchema, value: input }, apiInvoiceSchema, options);
  }

  /** Reads one invoice's current state (assumed path `GET /v1/invoices/{id}`). */
  async get(invoiceId: string, options?: RequestOptions): Promise<ApiInvoice> {
    return this.transport.get(this.at(invoiceId), apiInvoiceSchema, options);
  }

  /** Requests cash or transfer payment instructions for a pending invoice (`POST /v1/invoices/{id}/payments`). */
  async requestPayment(invoiceId: string, input: RequestPaymentInput, options?: RequestOptions): Promise<RequestPaymentResponse> {
    return this.transport.post(
      this.at(invoiceId, 'payments'),
      { schema: requestPaymentInputSchema, value: input },
      requestPaymentResponseSchema,
      options,
    );
  }

  /** Records the invoice as paid outside the service (`POST /v1/invoices/{id}/mark-paid`); makes an `OTHER` payment. */
  async markPaid(invoiceId: string, input: MarkPaidInput = {}, options?: RequestOptions): Promise<MarkPaidResponse> {
    return this.transport.post(
      this.at(invoiceId, 'mark-paid'),
      { schema: markPaidInputSchema, value: input },
      markPaidResponseSchema,
      options,
    );
  }
}
