import { createInterface } from 'node:readline/promises';
import { SilentFailure, UsageError } from './cli-errors.js';

/** Where the question is asked: by default the process's stdin and stderr (stdout stays the result). */
export interface Terminal {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean };
}

/**
 * Lets a bulk change go ahead: at once for a single event or with `--yes`; otherwise asks y/N on a
 * terminal, and refuses without one (a script must say `--yes`). Throws {@link UsageError} on refusal and
 * {@link SilentFailure} when the answer is no.
 *
 * @example
 * await confirmBulk({ count: 40, action: 're-queue 40 events', yes: opts.yes });
 */
export async function confirmBulk(
  request: {
    count: number;
    action: string;
    yes: boolean /** Ask even for a single event (a change that cannot be undone). */;
    always?: boolean;
  },
  terminal: Terminal = { input: process.stdin, output: process.stderr },
): Promise<void> {
  if ((request.count <= 1 && !request.always) || request.yes) return;
  if (!terminal.input.isTTY || !terminal.output.isTTY) {
    throw new UsageError(
      `Refusing to ${request.action} without confirmation, and there is no terminal to ask on. Pass --yes to confirm (--dry-run shows what would change).`,
    );
  }
  const prompt = createInterface({ input: terminal.input, output: terminal.output });
  // Ctrl-C or Ctrl-D at the question mean no (readline would otherwise only pause, leaving the process waiting).
  const cancel = new AbortController();
  prompt.once('SIGINT', () => cancel.abort());
  prompt.once('close', () => cancel.abort());
  try {
    const question = `${request.action[0]!.toUpperCase()}${request.action.slice(1)}? [y/N] `;
    const answer = await prompt.question(question, { signal: cancel.signal }).catch(() => '');
    if (/^y(es)?$/i.test(answer.trim())) return;
  } finally {
    prompt.close();
  }
  terminal.output.write('Nothing changed.\n');
  throw new SilentFailure();
}
