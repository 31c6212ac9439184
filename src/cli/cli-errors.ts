import { PayhooksError } from '../errors.js';

/** A mistake on the command line or a refused operation; `run` prints its message and exits 1. */
export class UsageError extends PayhooksError {}

/** A failure already explained on stderr; `run` exits with `exitCode` (default 1) without printing more. */
export class SilentFailure extends Error {
  constructor(readonly exitCode = 1) {
    super();
  }
}
