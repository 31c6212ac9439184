import {
  apiCustomerSchema,
  createCustomerInputSchema,
  pageQuerySchema,
  type ApiCustomer,
  type CreateCustomerInput,
  type ListPage,
  type PageQuery,
} from '../events/rest-contract.js';
import { ApiResource } from './api-resource.js';
import type { RequestOptions } from './http-transport.js';
import { iteratePages } from './pagination.js';

/** Customers: `POST /v1/customers` (spec); `GET /v1/customers` and `GET /v1/customers/{id}` (assumed). */
export class Customers extends ApiResource {
  /**
   * Creates a customer. `username`, `email` and `phoneNumber` must each be unique (a repeat is a
   * `ConflictError`); the phone number must be E.164, checked before any request.
   *
   * @example
   * const customer = await client.customers.create({ username: 'ada', email: 'ada@example.com', phoneNumber: '+525500000001' });
   */
  async create(input: CreateCustomerInput, options?: RequestOptions): Promise<ApiCustomer> {
    return this.transport.post(this.basePath, { schema: createCustomerInputSchema, value: input }, apiCustomerSchema, options);
  }

  /** Reads one customer (assumed path `GET /v1/customers/{id}`). */
  async get(customerId: string, options?: RequestOptions): Promise<ApiCustomer> {
    return this.transport.get(this.at(customerId), apiCustomerSchema, options);
  }

  /** One page of customers (assumed path `GET /v1/customers`); `take` 1 to 100. */
  async list(query: PageQuery = {}, options?: RequestOptions): Promise<ListPage<ApiCustomer>> {
    return this.transport.list(this.basePath, apiCustomerSchema, { schema: pageQuerySchema, value: query }, options);
  }

  /** Every customer from `skip` on, 100 per request. */
  iterate(query: Omit<PageQuery, 'take'> = {}, options?: RequestOptions): AsyncGenerator<ApiCustomer, void, undefined> {
    return iteratePages((page) => this.list(page, options), query.skip);
  }
}
