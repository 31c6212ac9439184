import { PayhooksError } from '../errors.js';

/** The resources a flow creates whose fields `--override` may set. */
export type OverridableResource = 'customer' | 'invoice' | 'subscription';

/**
 * The values a flow's calls should use instead of its own: `set` by path (`invoice.amount`, `customer.email`),
 * metadata pairs to `add` by path (`invoice.metadata.plan` → `gold`), and metadata keys to `remove`
 * (`customer.metadata.source`). Applied to the REST calls the flow makes, so the simulator creates the objects
 * with these values and its events carry them.
 */
export interface FlowOverrides {
  set?: Readonly<Record<string, string>> | undefined;
  add?: Readonly<Record<string, string>> | undefined;
  remove?: readonly string[] | undefined;
}

/** The fields of each resource that may be set, and whether the value is a whole number. */
const FIELDS: Record<OverridableResource, Record<string, 'text' | 'integer'>> = {
  customer: { name: 'text', email: 'text', username: 'text', phoneNumber: 'text' },
  invoice: { amount: 'integer', currency: 'text', description: 'text', dueDate: 'text', collectionMethod: 'text' },
  subscription: { amount: 'integer', currency: 'text', description: 'text', numberOfPayments: 'integer', firstCollectionDate: 'text' },
};

/** The resources whose create call takes metadata pairs. */
const WITH_METADATA: readonly OverridableResource[] = ['customer', 'invoice'];

/** What one resource's create call gets: fields by name and the final metadata pairs. */
export interface ResourceOverrides {
  fields: Record<string, string | number>;
  metadata: { key: string; value: string }[];
}

/** {@link FlowOverrides} checked against what a flow creates, with each resource's metadata worked out. */
export type ResolvedOverrides = Record<OverridableResource, ResourceOverrides>;

/** An override naming a path the flow does not create, or a value of the wrong kind; the message lists the paths. */
export class FlowOverrideError extends PayhooksError {}

/** The paths a flow creating `resources` accepts, for messages and `--help`. */
export function overridePaths(resources: readonly OverridableResource[]): string[] {
  return resources.flatMap((resource) => [
    ...Object.keys(FIELDS[resource]).map((field) => `${resource}.${field}`),
    ...(WITH_METADATA.includes(resource) ? [`${resource}.metadata.KEY`] : []),
  ]);
}

/**
 * Checks `overrides` against the resources a flow creates and merges the metadata: the flow's own pairs
 * (`defaults`), minus `remove`, plus `add`. Throws a {@link FlowOverrideError} that lists the flow's paths for a path
 * it does not create, and names the path for a value that is not a whole number where one is needed.
 *
 * @example
 * resolveOverrides('cash-payment', ['customer', 'invoice'], { set: { 'invoice.amount': '777' } }, {}).invoice.fields;
 * // { amount: 777 }
 */
export function resolveOverrides(
  flow: string,
  resources: readonly OverridableResource[],
  overrides: FlowOverrides = {},
  defaults: Partial<Record<OverridableResource, { key: string; value: string }[]>> = {},
): ResolvedOverrides {
  const paths = overridePaths(resources);
  const refuse = (path: string): never => {
    throw new FlowOverrideError(`${path} is not a path the flow ${flow} creates. Its paths: ${paths.join(', ')}.`);
  };
  const resolved = {} as ResolvedOverrides;
  for (const resource of ['customer', 'invoice', 'subscription'] as const) {
    resolved[resource] = { fields: {}, metadata: (defaults[resource] ?? []).map((pair) => ({ ...pair })) };
  }
  for (const [path, value] of Object.entries(overrides.set ?? {})) {
    const [resource, field, ...rest] = path.split('.');
    const kind = isResource(resource, resources) && rest.length === 0 ? FIELDS[resource][field ?? ''] : undefined;
    if (!kind || !isResource(resource, resources)) return refuse(path);
    if (kind === 'integer' && !/^\d{1,15}$/.test(value)) {
      throw new FlowOverrideError(
        `${path} takes a whole number of the currency's smallest unit, e.g. ${path}=5000; not ${JSON.stringify(value)}.`,
      );
    }
    resolved[resource].fields[field!] = kind === 'integer' ? Number(value) : value;
  }
  const metadataTarget = (path: string): { resource: OverridableResource; key: string } => {
    const match = /^([a-z]+)\.metadata\.(.+)$/.exec(path);
    const resource = match?.[1];
    if (!match || !isResource(resource, resources) || !WITH_METADATA.includes(resource)) return refuse(path);
    return { resource, key: match[2]! };
  };
  for (const path of overrides.remove ?? []) {
    const { resource, key } = metadataTarget(path);
    resolved[resource].metadata = resolved[resource].metadata.filter((pair) => pair.key !== key);
  }
  for (const [path, value] of Object.entries(overrides.add ?? {})) {
    const { resource, key } = metadataTarget(path);
    resolved[resource].metadata = [...resolved[resource].metadata.filter((pair) => pair.key !== key), { key, value }];
  }
  return resolved;
}

function isResource(value: string | undefined, resources: readonly OverridableResource[]): value is OverridableResource {
  return (resources as readonly string[]).includes(value ?? '');
}

/**
 * Reads `PATH=VALUE` pairs (the CLI's repeated `--override` and `--add`) into a record; throws a
 * {@link FlowOverrideError} naming the flag for an item without `=` or with an empty path. A later pair wins.
 */
export function parsePairs(flag: string, items: readonly string[]): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const item of items) {
    const at = item.indexOf('=');
    if (at <= 0) throw new FlowOverrideError(`${flag} takes PATH=VALUE, e.g. ${flag} invoice.amount=5000; not ${JSON.stringify(item)}.`);
    pairs[item.slice(0, at)] = item.slice(at + 1);
  }
  return pairs;
}
