// Writes docs/event-reference.md from the zod schemas of src/events, so the reference says what the code
// checks and cannot drift from it: test/docs/event-reference.test.ts regenerates it and compares.
//
//   npm run docs:events
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { z } from 'zod';
import { EVENT_DATA_SCHEMAS, EVENT_TYPES, EXAMPLE_EVENTS, resourceKeyOf, type EventType } from '../src/events/index.js';
import * as resources from '../src/events/resources.js';
import { amount, currency, dateTime, integer, metadataPairSchema } from '../src/events/primitives.js';

/** Where the generated page goes. */
export const EVENT_REFERENCE_PATH = fileURLToPath(new URL('../docs/event-reference.md', import.meta.url));

/**
 * When the service sends each type: the "Event types" table of the Payment Collection Service spec. Typed by
 * `EventType`, so a type added to the catalog without a line here fails the typecheck.
 */
export const SENT_WHEN: { readonly [K in EventType]: string } = {
  INVOICE_CREATED: 'a payment request is created',
  INVOICE_UPDATED: 'a payment request is updated',
  INVOICE_CANCELED: 'a payment request is canceled',
  INVOICE_PAID: 'a request is settled through the service, or its total is zero',
  INVOICE_PAID_OTHER: 'a payment received outside the service is recorded',
  CUSTOMER_CREATED: 'a customer is created',
  CUSTOMER_UPDATED: 'a customer is updated',
  CUSTOMER_ARCHIVED: 'a customer is archived',
  PAYMENT_ATTEMPT_SUCCEEDED: 'a collection attempt ends successfully',
  PAYMENT_ATTEMPT_FAILED: 'a collection attempt is rejected or fails',
  PAYMENT_COMPLETED: 'a payment finishes processing',
  PAYMENT_METHOD_CREATED: 'a customer saves a payment method',
  PAYMENT_REFUNDED: 'a refund of a payment is updated',
  DISPUTE_CREATED: 'a chargeback is created',
  DISPUTE_RESPONSE_CREATED: 'a response to a chargeback is recorded',
  DISPUTE_RESOLVED: 'a chargeback is resolved',
  SUBSCRIPTION_CREATED: 'a subscription is created',
  SUBSCRIPTION_UPDATED: 'a subscription is updated',
  SUBSCRIPTION_CANCELED: 'a subscription is canceled',
};

type Schema = z.core.$ZodType;
type ObjectSchema = z.ZodObject<z.core.$ZodLooseShape>;

/** The named object schemas of src/events/resources.ts (plus the metadata pair), each with its section title. */
function namedResources(): Map<Schema, string> {
  const named = new Map<Schema, string>();
  for (const [exportName, value] of Object.entries(resources)) {
    if (!exportName.endsWith('Schema') || !isObject(value as Schema)) continue;
    const base = exportName.slice(0, -'Schema'.length);
    named.set(value as Schema, base.charAt(0).toUpperCase() + base.slice(1));
  }
  named.set(metadataPairSchema, 'MetadataPair');
  return named;
}

function kind(schema: Schema): string {
  return schema._zod.def.type;
}

function isObject(schema: Schema): schema is ObjectSchema {
  return typeof schema === 'object' && schema !== null && '_zod' in schema && kind(schema) === 'object';
}

/** Unknown fields are kept when the object's catchall accepts anything (`z.looseObject`). */
function keepsUnknownFields(schema: ObjectSchema): boolean {
  const catchall = schema._zod.def.catchall;
  return catchall !== undefined && kind(catchall) === 'unknown';
}

/** Peels `optional`, `nullable` and `nullish` off a field's schema. */
function unwrap(schema: Schema): { inner: Schema; optional: boolean; nullable: boolean } {
  let inner = schema;
  let optional = false;
  let nullable = false;
  for (;;) {
    const type = kind(inner);
    if (type === 'optional') optional = true;
    else if (type === 'nullable') nullable = true;
    else return { inner, optional, nullable };
    inner = (inner as z.ZodOptional<Schema> | z.ZodNullable<Schema>).unwrap() as Schema;
  }
}

function presence(field: { optional: boolean; nullable: boolean }): string {
  if (field.optional && field.nullable) return 'optional, nullable';
  if (field.optional) return 'optional';
  if (field.nullable) return 'required, nullable';
  return 'required';
}

/** A Markdown anchor of a section title, as GitHub makes it. */
function anchor(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');
}

interface Row {
  path: string;
  type: string;
  presence: string;
}

class Renderer {
  readonly named = namedResources();
  /** Resources linked from the tables, in the order first met. */
  readonly linked: Schema[] = [];

  /** The rows of an object's fields; anonymous nested objects are expanded under dotted names. */
  rows(schema: ObjectSchema, prefix = ''): Row[] {
    const rows: Row[] = [];
    for (const [name, field] of Object.entries(schema.shape)) {
      const unwrapped = unwrap(field as Schema);
      const path = `${prefix}${name}`;
      rows.push({ path, type: this.typeOf(unwrapped.inner), presence: presence(unwrapped) });
      const element = this.elementOf(unwrapped.inner);
      if (isObject(element) && !this.named.has(element)) {
        const suffix = element === unwrapped.inner ? '.' : '[].';
        rows.push(...this.rows(element, `${path}${suffix}`));
      }
    }
    return rows;
  }

  /** An array's element (through nullable items), or the schema itself. */
  elementOf(schema: Schema): Schema {
    return kind(schema) === 'array' ? unwrap((schema as z.ZodArray<Schema>).element as Schema).inner : schema;
  }

  typeOf(schema: Schema): string {
    const name = this.named.get(schema);
    if (name !== undefined) {
      if (!this.linked.includes(schema)) this.linked.push(schema);
      return `[${name}](#${anchor(name)})`;
    }
    if (schema === amount) return 'number (amount in minor units)';
    if (schema === currency) return 'string: ISO 4217 code, upper case (`MXN`)';
    if (schema === dateTime) return 'string: ISO 8601 date-time with offset, kept as received';
    if (schema === integer) return 'integer';
    switch (kind(schema)) {
      case 'object':
        return 'object';
      case 'array': {
        const element = unwrap((schema as z.ZodArray<Schema>).element as Schema);
        return `array of ${this.typeOf(element.inner)}${element.nullable ? ' or null' : ''}`;
      }
      case 'record': {
        const record = schema as z.ZodRecord<z.core.$ZodRecordKey, Schema>;
        return `map of ${this.typeOf(record.keyType as Schema)} to ${this.typeOf(record.valueType as Schema)}`;
      }
      case 'enum':
        return `one of ${(schema as z.ZodEnum).options.map((option) => `\`${String(option)}\``).join(', ')}`;
      case 'literal':
        return `\`${JSON.stringify((schema as z.ZodLiteral).value)}\``;
      case 'string':
        return this.stringType(schema as z.ZodString);
      case 'number': {
        const number = schema as z.ZodNumber;
        return number.isInt ? 'integer' : 'number';
      }
      case 'boolean':
        return 'boolean';
      case 'unknown':
      case 'any':
        return 'any JSON value';
      default:
        return kind(schema);
    }
  }

  stringType(schema: z.ZodString): string {
    if (schema.format === 'datetime') return 'string: ISO 8601 date-time';
    if (schema.format === 'regex') {
      const checks = schema._zod.def.checks ?? [];
      const patterns = checks.map((check) => (check._zod.def as { pattern?: RegExp }).pattern).filter((p) => p !== undefined);
      if (patterns.length > 0) return `string matching \`${patterns.map((p) => p.source).join('` and `')}\``;
    }
    if (schema.format) return `string (${schema.format})`;
    return schema.minLength !== null && schema.minLength > 0 ? 'string, not empty' : 'string';
  }

  table(schema: ObjectSchema): string[] {
    const lines = ['| field | type | presence |', '|---|---|---|'];
    for (const row of this.rows(schema)) lines.push(`| \`${row.path}\` | ${row.type} | ${row.presence} |`);
    if (!keepsUnknownFields(schema)) lines.push('', 'Fields not listed are dropped.');
    return lines;
  }
}

const INTRO = `# Event reference

<!-- Generated from the zod schemas in src/events by scripts/generate-event-reference.ts: run \`npm run docs:events\`
after changing a schema or an example. Do not edit by hand; test/docs/event-reference.test.ts fails when this
file and the schemas disagree. -->

Every delivery is a JSON envelope \`{"eventId", "eventType", "data"}\`. This page lists, for each of the 19 event
types, when the service sends it, the fields of its \`data\` as payhooks validates them, and an example (the
payload \`EXAMPLE_EVENTS\` exports, which tests, the simulator and \`payhooks trigger\` also use). How events are
parsed and typed: [events.md](events.md). What happens to an event whose \`data\` does not match:
[event-states.md](event-states.md).

Reading the tables:

- **required**: present and not null; **optional**: may be absent; **nullable**: may be null; fields marked
  \`optional, nullable\` (the spec's \`T?\`) may be either.
- Nested objects link to their section under [Resources](#resources); objects without a name of their own are
  expanded in place under dotted names (\`group.id\` in [PaymentConcept](#paymentconcept)), and \`items[].x\`
  would be a field of each item of an array. A nested field's presence applies when its parent is there.
- Unknown fields are kept (at every depth) and are not an error: the service may add fields.
- The ordering key is what \`resourceKeyOf\` gives for the example: events with the same key run one at a time,
  in the order received.
`;

/**
 * Renders the whole reference page.
 *
 * @example
 * writeFileSync('docs/event-reference.md', renderEventReference());
 */
export function renderEventReference(): string {
  const renderer = new Renderer();
  const out: string[] = [INTRO, '## Event types', '', '| eventType | sent when | ordering key of the example |', '|---|---|---|'];
  for (const type of EVENT_TYPES) {
    const key = resourceKeyOf(type, EXAMPLE_EVENTS[type].data);
    out.push(`| [\`${type}\`](#${anchor(type)}) | ${SENT_WHEN[type]} | ${key === null ? 'none' : `\`${key}\``} |`);
  }
  out.push('');

  for (const type of EVENT_TYPES) {
    const schema = EVENT_DATA_SCHEMAS[type] as unknown as ObjectSchema;
    const example = EXAMPLE_EVENTS[type];
    const key = resourceKeyOf(type, example.data);
    out.push(`## ${type}`, '', `Sent when ${SENT_WHEN[type]}.`, '');
    const shared = renderer.named.get(schema);
    out.push(shared ? `\`data\` is a [${shared}](#${anchor(shared)}):` : 'Fields of `data`:', '');
    out.push(...renderer.table(schema), '');
    out.push(`Ordering key of the example: ${key === null ? 'none' : `\`${key}\``}.`, '');
    out.push('Example:', '', '```json', JSON.stringify(example, null, 2), '```', '');
  }

  out.push('## Resources', '', 'The objects that event data embeds, as payhooks validates them, by name.', '');
  // A resource's fields can link further resources: walk until no new one appears, then list them by name.
  for (let i = 0; i < renderer.linked.length; i++) renderer.rows(renderer.linked[i] as ObjectSchema);
  const sections = renderer.linked.map((schema) => ({ schema, name: renderer.named.get(schema)! }));
  for (const { schema, name } of sections.sort((a, b) => a.name.localeCompare(b.name))) {
    out.push(`### ${name}`, '', ...renderer.table(schema as ObjectSchema), '');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(EVENT_REFERENCE_PATH, renderEventReference());
  console.log(`wrote ${EVENT_REFERENCE_PATH}`);
}
