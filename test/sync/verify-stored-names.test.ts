import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/events/event-types.js';
import { EXAMPLE_EVENTS } from '../../src/events/examples.js';
import { mirrorTargets } from '../../src/sync/mirror/event-targets.js';
import { NAMED_TABLES_OF } from '../../src/sync/verify/stored-names.js';

describe('NAMED_TABLES_OF', () => {
  it("lists, for every event type, the tables verify names through the events that the mirror sink's targets fall in", () => {
    const named = new Set(['payments', 'refunds', 'disputes', 'subscriptions', 'payment_methods']);
    const seen = new Set<string>();
    for (const eventType of EVENT_TYPES) {
      const tables = mirrorTargets(EXAMPLE_EVENTS[eventType])
        .map((target) => (target.kind === 'read' ? target.table : target.state.table))
        .filter((table) => named.has(table));
      for (const table of tables) seen.add(table);
      // Every table a target falls in is read for that type (a missing one would leave its records unchecked); an
      // invoice event names a payment only when it carries one, which the examples do not.
      const listed: readonly string[] = NAMED_TABLES_OF[eventType];
      expect([eventType, tables.filter((table) => !listed.includes(table))]).toEqual([eventType, []]);
    }
    // Each table is named by some type: a map of empty lists would pass the loop above and check nothing.
    expect([...seen].sort()).toEqual([...named].sort());
  });
});
