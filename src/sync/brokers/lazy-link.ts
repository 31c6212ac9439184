import { within } from '../../internal/within.js';

/** A broker connection as a publisher holds it: opened on first use, and again after it was lost. */
export interface LazyLink<L> {
  /** The open link, opening it when there is none; rejects once closed, or when opening fails (not remembered). */
  current(): Promise<L>;
  /**
   * Forgets `link` if it is still the current one and ends it in the background: for a link that looks dead
   * though no one said so (a publish got no answer in time), so that the next use opens a new one instead of
   * waiting on the silent one again.
   */
  drop(link: L): void;
  /** Refuses further use and ends the link, if one is open, within {@link LINK_END_TIMEOUT_MS} (then abandons it). */
  close(): Promise<void>;
}

/**
 * How long ending a link may take before it is abandoned. Ending politely (a drain, a close handshake) waits for the
 * broker, and a silent connection never answers: shutdown must not wait for it (issue 22, finding 6).
 */
export const LINK_END_TIMEOUT_MS = 2000;

/**
 * A failure to open a link whose message already says what is wrong and what to do, kept as it is instead of being
 * prefixed with "cannot connect" (the connection worked; the broker refused what was asked of it).
 */
export class BrokerSetupError extends Error {
  override name = 'BrokerSetupError';
}

/** How {@link lazyLink} ends a link. */
export interface LinkEnding<L> {
  /** Ends it politely (drain, close handshake). */
  end: (link: L) => Promise<unknown>;
  /** Called when `end` did not finish in time: drop the link without waiting for the broker. */
  abandon?: ((link: L) => void) | undefined;
}

/**
 * Holds one connection to a broker for a publisher. `open` gets a `lost` callback to call when the connection goes
 * away; only the link it opened is forgotten then, so a late event of an old connection cannot drop a newer one.
 *
 * @example
 * const link = lazyLink('RabbitMQ', where, async (lost) => { … connection.on('close', lost); … }, { end: (l) => l.connection.close() });
 */
export function lazyLink<L>(broker: string, where: string, open: (lost: () => void) => Promise<L>, ending: LinkEnding<L>): LazyLink<L> {
  let link: Promise<L> | undefined;
  // The value `link` resolved to, so that drop() can tell whether the link it is given is still the current one.
  let opened: L | undefined;
  let closed = false;

  async function finish(live: L): Promise<void> {
    const outcome = await within(
      ending.end(live).catch(() => undefined),
      LINK_END_TIMEOUT_MS,
    );
    if (outcome === 'timeout') {
      try {
        ending.abandon?.(live);
      } catch {
        // abandoning is the last resort; nothing is left to do with a failure of it
      }
    }
  }

  return {
    current() {
      if (closed) return Promise.reject(new Error(`${broker} publisher for ${where} is closed`));
      if (!link) {
        const opening: Promise<L> = open(() => {
          if (link !== opening) return;
          const live = opened;
          link = undefined;
          opened = undefined;
          // What is left of it (a RabbitMQ connection whose channel the broker closed) is ended, not leaked.
          if (live !== undefined) void finish(live);
        }).then(
          (live) => {
            if (link === opening) opened = live;
            return live;
          },
          (err: unknown) => {
            if (link === opening) link = undefined;
            if (err instanceof BrokerSetupError) throw err;
            throw new Error(`cannot connect to ${broker} at ${where}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
          },
        );
        link = opening;
      }
      return link;
    },
    drop(live) {
      // Ended once: a link already dropped, lost or replaced has been ended by then.
      if (opened !== live) return;
      link = undefined;
      opened = undefined;
      void finish(live);
    },
    async close() {
      closed = true;
      const pending = link;
      link = undefined;
      opened = undefined;
      const live = await pending?.catch(() => undefined);
      if (live !== undefined) await finish(live);
    },
  };
}
