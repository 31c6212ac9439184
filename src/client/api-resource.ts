import { ApiInputError } from './errors.js';
import type { HttpTransport } from './http-transport.js';

/**
 * The base of every resource group: it holds the transport and the group's base path, and builds the
 * paths of single records. Subclasses only name paths and types; each method is one line.
 */
export abstract class ApiResource {
  protected readonly transport: HttpTransport;
  protected readonly basePath: string;

  constructor(transport: HttpTransport, basePath: string) {
    this.transport = transport;
    this.basePath = basePath;
  }

  /** `basePath/{id}/…rest`, the id checked (non-empty) and URL-encoded. */
  protected at(id: string, ...rest: string[]): string {
    if (typeof id !== 'string' || id.trim() === '') {
      throw new ApiInputError(`${this.basePath}/{id}: the id must be a non-empty string, no request was sent`, [
        { path: 'id', message: 'must be a non-empty string' },
      ]);
    }
    return [this.basePath, encodeURIComponent(id), ...rest].join('/');
  }
}
