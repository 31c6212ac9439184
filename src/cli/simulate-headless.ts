import { dirname } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Logger } from 'pino';
import { runPeriodically, type PeriodicTask } from '../internal/periodic.js';
import type { SimulatorSession } from '../service/simulator-session.js';
import type { Simulator } from '../simulator/index.js';
import { readSimulatorStateFile, type SimulatorSnapshot, writeSimulatorStateFile } from '../simulator/state-file.js';

/** How often `--state` writes the state when it changed. */
const STATE_WRITE_EVERY_MS = 1000;

/** One organization in `simulate --json`'s `accounts`. */
export interface HeadlessAccount {
  id: string;
  name: string;
  apiKey: string;
  endpointId: string | null;
  secret: string | null;
}

/** What `payhooks simulate --json` prints, as one line. */
export interface HeadlessInfo {
  url: string;
  apiKey: string;
  endpointId: string | null;
  secret: string | null;
  forwardTo: string | null;
  clock: 'real' | 'manual';
  now: string;
  state: string | null;
  pid: number;
  accounts: HeadlessAccount[];
}

/**
 * The one JSON line of `simulate --json`: the address, the key, the `--forward-to` endpoint and its secret (null
 * without `--forward-to`), the clock, and the organizations: one element each (`simulate --accounts`), the first
 * with the top-level key, endpoint and secret.
 */
export function headlessLine(simulator: Simulator, session: SimulatorSession | undefined, state: string | undefined): string {
  const first = simulator.organizations()[0]!;
  const registered = new Map((session?.accounts ?? []).map((account) => [account.id, account]));
  const info: HeadlessInfo = {
    url: simulator.url,
    apiKey: first.apiKey,
    endpointId: session?.endpointId ?? null,
    secret: session?.secret ?? null,
    forwardTo: session?.forwardTo ?? null,
    clock: simulator.clock.mode,
    now: simulator.clock.now().toISOString(),
    state: state ?? null,
    pid: process.pid,
    // Every organization (simulate --accounts): its account id, key, and the endpoint --forward-to registered for it.
    accounts: simulator.organizations().map((organization) => ({
      id: organization.id,
      name: organization.name,
      apiKey: organization.apiKey,
      endpointId: registered.get(organization.id)?.endpointId ?? (organization === first ? (session?.endpointId ?? null) : null),
      secret: registered.get(organization.id)?.secret ?? (organization === first ? (session?.secret ?? null) : null),
    })),
  };
  return JSON.stringify(info);
}

/** The snapshot in `file`, or undefined on a first start; an Error for a file that is not a state file. */
export function loadState(file: string): SimulatorSnapshot | undefined {
  return readSimulatorStateFile(file);
}

/**
 * Writes the simulator's state to `file` now, then each second when it changed, and once more on `stop()`: a
 * restart with the same `--state` finds the customers, endpoints (with their secrets) and the rest. A write that
 * fails is logged and tried again at the next tick.
 */
export function keepState(simulator: Simulator, file: string, logger: Logger): PeriodicTask {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  let written = '';
  const save = () => {
    const snapshot = simulator.snapshot();
    // savedAt changes on every snapshot; compare the rest, so an idle simulator writes nothing.
    const content = JSON.stringify({ ...snapshot, savedAt: '' });
    if (content === written) return;
    try {
      writeSimulatorStateFile(file, snapshot);
      written = content;
    } catch (err) {
      logger.warn({ err, file }, 'could not write the simulator state file; trying again in a second');
    }
  };
  save();
  const task = runPeriodically(STATE_WRITE_EVERY_MS, 'The state interval', async () => save());
  return {
    async stop() {
      await task.stop();
      save();
    },
  };
}
