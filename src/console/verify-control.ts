import type { SweeperRun } from '../store/sweeper-runs.js';

/**
 * What `POST /admin/api/verify` asks for: a sample per resource (null: everything), whether to repair, and of which
 * account (undefined: each account in turn, as the console shows when not filtered by account).
 */
export interface VerifyRunRequest {
  sample: number | null;
  repair: boolean;
  account?: string | undefined;
}

/** A verify going on. */
export interface RunningVerify {
  sample: number | null;
  repair: boolean;
  /** The account it verifies; null: each account in turn. */
  account: string | null;
  startedAt: Date;
}

/** The verify state of one account, or of all: see {@link VerifyControl.state}. */
export interface VerifyState {
  running: RunningVerify | null;
  /** The newest recorded run whose verify ran (of the sweeper or the console), of the account asked for or of any. */
  last: SweeperRun | null;
  /** The newest such run of each account (of the one asked for), newest first. */
  runs: SweeperRun[];
}

/**
 * The console's handle on verify runs, given by the service that can run them (it holds the API clients and knows
 * the mirror): the admin API only starts runs and reads their state through it.
 */
export interface VerifyControl {
  /** Starts a run in the background and returns it; a string is why none can start (answered 409). */
  start(request: VerifyRunRequest): RunningVerify | string;
  /** The run going on, if any, and the newest recorded runs whose verify ran: of `account`, or of every account. */
  state(account?: string): Promise<VerifyState>;
}
