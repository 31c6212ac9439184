import { readFileSync } from 'node:fs';
import { writeFileWhole } from '../internal/write-whole.js';
import type { EmittedEvent } from './context.js';
import type { SimulatorState } from './state.js';

/**
 * Everything a simulator holds that a restart with `--state FILE` keeps: the organization, customers, concepts,
 * invoices, payments and their attempts, refunds, disputes, subscriptions, payment methods, webhook endpoints with
 * their secrets, the events emitted, and a manual clock's time. Not kept: the delivery history, pending retries
 * and idempotency keys (a restarted service would have its own).
 */
export interface SimulatorSnapshot {
  version: 1;
  savedAt: string;
  clock: { mode: 'real' | 'manual'; now: string };
  organization: { id: string; name: string };
  maps: Record<StoredMap, [string, unknown][]>;
  events: EmittedEvent[];
}

const STORED_MAPS = [
  'customers',
  'concepts',
  'invoices',
  'payments',
  'attempts',
  'endpoints',
  'refunds',
  'disputes',
  'subscriptions',
  'paymentMethods',
] as const;
type StoredMap = (typeof STORED_MAPS)[number];

/** A deep copy of the simulator's state, ready to be written as JSON. */
export function snapshotState(
  state: SimulatorState,
  events: readonly EmittedEvent[],
  clock: { mode: 'real' | 'manual'; now: number },
): SimulatorSnapshot {
  const maps = Object.fromEntries(STORED_MAPS.map((name) => [name, [...state[name].entries()]])) as SimulatorSnapshot['maps'];
  return structuredClone({
    version: 1 as const,
    savedAt: new Date().toISOString(),
    clock: { mode: clock.mode, now: new Date(clock.now).toISOString() },
    organization: { ...state.organization },
    maps,
    events: [...events],
  });
}

/** Fills an empty state (and the list of emitted events) from a snapshot. */
export function restoreState(state: SimulatorState, events: EmittedEvent[], snapshot: SimulatorSnapshot): void {
  Object.assign(state.organization, snapshot.organization);
  for (const name of STORED_MAPS) {
    const map = state[name] as Map<string, unknown>;
    for (const [key, value] of structuredClone(snapshot.maps[name] ?? [])) map.set(key, value);
  }
  events.push(...structuredClone(snapshot.events));
}

/**
 * Reads a state file written by {@link writeSimulatorStateFile}: undefined when there is none yet (the first
 * start), an Error naming the file when it is not one.
 */
export function readSimulatorStateFile(path: string): SimulatorSnapshot | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`Cannot read the simulator state file ${path}: ${(err as Error).message}`, { cause: err });
  }
  let parsed: Partial<SimulatorSnapshot>;
  try {
    parsed = JSON.parse(text) as Partial<SimulatorSnapshot>;
  } catch (err) {
    throw new Error(`${path} is not a simulator state file (not JSON); move it away or pass another --state FILE.`, { cause: err });
  }
  const ok =
    parsed.version === 1 &&
    typeof parsed.organization?.id === 'string' &&
    typeof parsed.clock?.now === 'string' &&
    Array.isArray(parsed.events) &&
    STORED_MAPS.every((name) => Array.isArray(parsed.maps?.[name]));
  if (!ok) throw new Error(`${path} is not a simulator state file (version 1); move it away or pass another --state FILE.`);
  return parsed as SimulatorSnapshot;
}

/** Writes the snapshot whole (a temporary file renamed over the old one), mode 0600: it holds endpoint secrets. */
export function writeSimulatorStateFile(path: string, snapshot: SimulatorSnapshot): void {
  writeFileWhole(path, `${JSON.stringify(snapshot)}\n`, { mode: 0o600 });
}
