import type { SweeperRun } from '../store/sweeper-runs.js';

/** What `POST /admin/api/verify` asks for: a sample per resource (null: everything) and whether to repair. */
export interface VerifyRunRequest {
  sample: number | null;
  repair: boolean;
}

/** A verify going on. */
export interface RunningVerify extends VerifyRunRequest {
  startedAt: Date;
}

/**
 * The console's handle on verify runs, given by the service that can run them (it holds the API client and knows
 * the mirror): the admin API only starts runs and reads their state through it.
 */
export interface VerifyControl {
  /** Starts a run in the background and returns it; a string is why none can start (answered 409). */
  start(request: VerifyRunRequest): RunningVerify | string;
  /** The run going on, if any, and the newest recorded run whose verify ran (of the sweeper or the console). */
  state(): Promise<{ running: RunningVerify | null; last: SweeperRun | null }>;
}
