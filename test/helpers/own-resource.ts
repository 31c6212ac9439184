import { resourceKeyOf, type WebhookEvent } from '../../src/events/index.js';

// Where each event type's resource key reads its id (src/events/resource-key.ts).
const ID_PATHS = [
  ['invoiceId'],
  ['invoice', 'id'],
  ['id'],
  ['payment', 'id'],
  ['customer', 'id'],
  ['dispute', 'id'],
  ['subscription', 'id'],
];

/**
 * `event` with a resource of its own: `suffix` appended to the id its resource key reads (`invoice:inv_5Rk9Lm` becomes
 * `invoice:inv_5Rk9Lm_<suffix>`). The worker runs the events of one resource one at a time, each claim scanning that
 * resource's backlog, so a thousand events of the example resources drain in a few long lines at quadratic cost; a
 * test that is not about per-resource order gives each event its own. Throws if the key did not change.
 */
export function withOwnResource<E extends WebhookEvent>(event: E, suffix: string): E {
  const key = resourceKeyOf(event.eventType, event.data);
  if (key === null) return event;
  const id = key.slice(key.indexOf(':') + 1);
  const data = structuredClone(event.data) as Record<string, unknown>;
  for (const path of ID_PATHS) {
    let parent: Record<string, unknown> | undefined = data;
    for (const name of path.slice(0, -1)) {
      const next: unknown = parent?.[name];
      parent = next !== null && typeof next === 'object' ? (next as Record<string, unknown>) : undefined;
    }
    const last = path.at(-1)!;
    if (parent?.[last] === id) parent[last] = `${id}_${suffix}`;
  }
  const changed = { ...event, data } as E;
  if (resourceKeyOf(changed.eventType, changed.data) !== `${key}_${suffix}`)
    throw new Error(`withOwnResource could not give ${event.eventType} a resource of its own (key ${key})`);
  return changed;
}
