import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { listen } from './servers.js';

// A small HubSpot-like CRM (CRM v3 objects, v4 associations) on loopback that is strict about what it is sent,
// so a connector's mistakes show up as rejections instead of passing unnoticed.

export type CrmObjectType = 'contacts' | 'deals';

export interface CrmObject {
  id: string;
  properties: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

/** One request as received, with the status the stub answered. */
export interface StubRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: unknown;
  status: number;
}

/** An answer of 400 or more that a correct connector should not get (the 404 and 409 of an upsert are not here). */
export interface StubRejection {
  method: string;
  path: string;
  status: number;
  message: string;
  /** Answered by `intercept`, not by the stub's own checks. */
  injected: boolean;
}

export interface StubCrmOptions {
  /** The bearer token every request must carry. */
  token: string;
  /** Answers a request instead of the stub (after the token check): a fault to inject. Undefined lets the stub answer. */
  intercept?: (request: { method: string; path: string; body: unknown }) => { status: number; body: unknown } | undefined;
}

export interface StubCrm {
  url: string;
  requests: StubRequest[];
  rejections: StubRejection[];
  contacts(): CrmObject[];
  deals(): CrmObject[];
  /** Deal → contact associations, each once however often it was PUT. */
  associations(): Array<{ dealId: string; contactId: string }>;
  close(): Promise<void>;
}

export const DEAL_STAGES = [
  'appointmentscheduled',
  'qualifiedtobuy',
  'presentationscheduled',
  'decisionmakerboughtin',
  'contractsent',
  'closedwon',
  'closedlost',
] as const;

const DECIMAL = /^-?\d+(\.\d+)?$/;

interface ObjectRules {
  properties: readonly string[];
  /** Properties whose non-empty values may appear on one object only; the first is the one upserts key on. */
  unique: readonly [string, ...string[]];
  check(properties: Record<string, string>): string | undefined;
}

const RULES: Record<CrmObjectType, ObjectRules> = {
  contacts: {
    properties: ['email', 'firstname', 'lastname', 'phone', 'payhooks_customer_id'],
    unique: ['payhooks_customer_id', 'email'],
    check: (p) => (p.email && !/^[^@\s]+@[^@\s]+$/.test(p.email) ? `Email address ${p.email} is invalid` : undefined),
  },
  deals: {
    properties: ['dealname', 'amount', 'deal_currency_code', 'pipeline', 'dealstage', 'closedate', 'payhooks_invoice_id'],
    unique: ['payhooks_invoice_id'],
    check(p) {
      if (p.amount !== undefined && !DECIMAL.test(p.amount)) return `${JSON.stringify(p.amount)} is not a valid decimal for amount`;
      if (p.dealstage !== undefined && !(DEAL_STAGES as readonly string[]).includes(p.dealstage)) {
        return `${JSON.stringify(p.dealstage)} is not a valid deal stage of pipeline default`;
      }
      if (p.pipeline !== undefined && p.pipeline !== 'default') return `${JSON.stringify(p.pipeline)} is not a valid pipeline`;
      if (p.deal_currency_code !== undefined && !/^[A-Z]{3}$/.test(p.deal_currency_code))
        return 'deal_currency_code must be an ISO 4217 code';
      if (p.closedate && Number.isNaN(Date.parse(p.closedate))) return `${JSON.stringify(p.closedate)} is not a valid date for closedate`;
      return undefined;
    },
  },
};

class Answer extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly category: string,
    /** A 404 or 409 an upsert expects; not a rejection. */
    readonly expected = false,
  ) {
    super(message);
  }
}

/** Starts the stub on a free loopback port. */
export async function startStubCrm(options: StubCrmOptions): Promise<StubCrm> {
  const objects: Record<CrmObjectType, Map<string, CrmObject>> = { contacts: new Map(), deals: new Map() };
  const associations = new Map<string, { dealId: string; contactId: string }>();
  const requests: StubRequest[] = [];
  const rejections: StubRejection[] = [];
  let nextId = 1000;

  const findBy = (type: CrmObjectType, property: string, value: string) =>
    [...objects[type].values()].find((object) => object.properties[property] === value);

  /** The properties of a write body, checked as HubSpot would: known names, string values, the type's own rules. */
  function propertiesOf(type: CrmObjectType, body: unknown): Record<string, string> {
    const keys = body !== null && typeof body === 'object' ? Object.keys(body) : [];
    const properties = (body as { properties?: unknown } | null)?.properties;
    if (keys.length !== 1 || keys[0] !== 'properties' || properties === null || typeof properties !== 'object') {
      throw new Answer(400, 'Invalid input JSON: expected an object with only "properties"', 'VALIDATION_ERROR');
    }
    for (const [name, value] of Object.entries(properties)) {
      if (!RULES[type].properties.includes(name)) throw new Answer(400, `Property "${name}" does not exist`, 'VALIDATION_ERROR');
      if (typeof value !== 'string') throw new Answer(400, `Property "${name}" must be sent as a string`, 'VALIDATION_ERROR');
    }
    const checked = properties as Record<string, string>;
    const problem = RULES[type].check(checked);
    if (problem) throw new Answer(400, `Property values were not valid: ${problem}`, 'VALIDATION_ERROR');
    return checked;
  }

  /** A 409 when another object already holds one of the unique values; `expected` when it is the upsert key. */
  function checkUnique(type: CrmObjectType, properties: Record<string, string>, self?: CrmObject): void {
    for (const property of RULES[type].unique) {
      const value = properties[property];
      const holder = value ? findBy(type, property, value) : undefined;
      if (holder && holder !== self) {
        const expected = !self && property === RULES[type].unique[0];
        throw new Answer(
          409,
          `${type} with ${property}=${value} already exists. Existing ID: ${holder.id}`,
          'OBJECT_ALREADY_EXISTS',
          expected,
        );
      }
    }
  }

  function lookUp(type: CrmObjectType, id: string, idProperty: string | undefined): CrmObject {
    if (idProperty !== undefined && !RULES[type].unique.includes(idProperty)) {
      throw new Answer(400, `${idProperty} is not a unique property of ${type}`, 'VALIDATION_ERROR');
    }
    const found = idProperty ? findBy(type, idProperty, id) : objects[type].get(id);
    if (!found) throw new Answer(404, `No ${type} with ${idProperty ?? 'id'} ${id}`, 'OBJECT_NOT_FOUND', idProperty !== undefined);
    return found;
  }

  function route(method: string, path: string, query: Record<string, string>, body: unknown): { status: number; body: unknown } {
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    const [crm, version, objectsWord, type, id, ...rest] = parts;
    if (crm !== 'crm' || objectsWord !== 'objects') throw new Answer(404, `Nothing at ${path}`, 'NOT_FOUND');
    if (version === 'v4') {
      // PUT /crm/v4/objects/deals/{dealId}/associations/default/contacts/{contactId}
      const [word, label, toType, contactId, ...extra] = rest;
      if (
        type !== 'deals' ||
        !id ||
        word !== 'associations' ||
        label !== 'default' ||
        toType !== 'contacts' ||
        !contactId ||
        extra.length
      ) {
        throw new Answer(404, `Nothing at ${path}`, 'NOT_FOUND');
      }
      if (method !== 'PUT') throw new Answer(405, `${method} is not allowed on ${path}`, 'METHOD_NOT_ALLOWED');
      const deal = lookUp('deals', id, undefined);
      const contact = lookUp('contacts', contactId, undefined);
      associations.set(`${deal.id}>${contact.id}`, { dealId: deal.id, contactId: contact.id });
      return { status: 200, body: { status: 'COMPLETE', results: [{ from: { id: deal.id }, to: { id: contact.id } }] } };
    }
    if (version !== 'v3' || (type !== 'contacts' && type !== 'deals') || rest.length > 0)
      throw new Answer(404, `Nothing at ${path}`, 'NOT_FOUND');
    const now = new Date().toISOString();
    if (id === undefined) {
      if (method !== 'POST') throw new Answer(405, `${method} is not allowed on ${path}`, 'METHOD_NOT_ALLOWED');
      const properties = propertiesOf(type, body);
      if (!properties[RULES[type].unique[0]]) throw new Answer(400, `${RULES[type].unique[0]} is required`, 'VALIDATION_ERROR');
      checkUnique(type, properties);
      const object: CrmObject = { id: String(nextId++), properties: { ...properties }, createdAt: now, updatedAt: now };
      objects[type].set(object.id, object);
      return { status: 201, body: view(object) };
    }
    const object = lookUp(type, id, query.idProperty);
    if (method === 'GET') return { status: 200, body: view(object) };
    if (method !== 'PATCH') throw new Answer(405, `${method} is not allowed on ${path}`, 'METHOD_NOT_ALLOWED');
    const properties = propertiesOf(type, body);
    if (query.idProperty && properties[query.idProperty] !== undefined && properties[query.idProperty] !== id) {
      throw new Answer(400, `${query.idProperty} in the body differs from the one in the path`, 'VALIDATION_ERROR');
    }
    checkUnique(type, properties, object);
    Object.assign(object.properties, properties);
    object.updatedAt = now;
    return { status: 200, body: view(object) };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://stub');
    const method = req.method ?? 'GET';
    const text = Buffer.concat(await req.toArray()).toString('utf8');
    const record: StubRequest = {
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body: undefined,
      status: 0,
    };
    requests.push(record);
    let answer: { status: number; body: unknown };
    try {
      if (req.headers.authorization !== `Bearer ${options.token}`) {
        throw new Answer(401, 'Authentication credentials not found or invalid', 'INVALID_AUTHENTICATION');
      }
      if (text) {
        if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) {
          throw new Answer(415, `Content type ${req.headers['content-type'] ?? '(none)'} is not supported`, 'UNSUPPORTED_MEDIA_TYPE');
        }
        try {
          record.body = JSON.parse(text);
        } catch {
          throw new Answer(400, 'Invalid input JSON', 'VALIDATION_ERROR');
        }
      }
      const injected = options.intercept?.({ method, path: url.pathname, body: record.body });
      if (injected) {
        const message = (injected.body as { message?: string } | null)?.message ?? JSON.stringify(injected.body);
        if (injected.status >= 400) rejections.push({ method, path: url.pathname, status: injected.status, message, injected: true });
        answer = injected;
      } else {
        answer = route(method, url.pathname, record.query, record.body);
      }
    } catch (err) {
      if (!(err instanceof Answer)) throw err;
      if (!err.expected) rejections.push({ method, path: url.pathname, status: err.status, message: err.message, injected: false });
      answer = { status: err.status, body: { status: 'error', message: err.message, category: err.category } };
    }
    record.status = answer.status;
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      rejections.push({ method: req.method ?? '', path: req.url ?? '', status: 500, message: String(err), injected: false });
      res.writeHead(500).end();
    });
  });
  const listening = await listen(server);
  return {
    url: listening.url,
    requests,
    rejections,
    contacts: () => [...objects.contacts.values()],
    deals: () => [...objects.deals.values()],
    associations: () => [...associations.values()],
    close: listening.close,
  };
}

function view(object: CrmObject) {
  return {
    id: object.id,
    properties: { ...object.properties, hs_object_id: object.id },
    createdAt: object.createdAt,
    updatedAt: object.updatedAt,
    archived: false,
  };
}
