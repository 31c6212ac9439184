/** A broker connection as a publisher holds it: opened on first use, and again after it was lost. */
export interface LazyLink<L> {
  /** The open link, opening it when there is none; rejects once closed, or when opening fails (not remembered). */
  current(): Promise<L>;
  /** Refuses further use and ends the link, if one is open. */
  close(): Promise<void>;
}

/**
 * Holds one connection to a broker for a publisher. `open` gets a `lost` callback to call when the connection goes
 * away; only the link it opened is forgotten then, so a late event of an old connection cannot drop a newer one.
 *
 * @example
 * const link = lazyLink('RabbitMQ', where, async (lost) => { … connection.on('close', lost); … }, (l) => l.connection.close());
 */
export function lazyLink<L>(
  broker: string,
  where: string,
  open: (lost: () => void) => Promise<L>,
  end: (link: L) => Promise<unknown>,
): LazyLink<L> {
  let link: Promise<L> | undefined;
  let closed = false;
  return {
    current() {
      if (closed) return Promise.reject(new Error(`${broker} publisher for ${where} is closed`));
      if (!link) {
        const opening: Promise<L> = open(() => {
          if (link === opening) link = undefined;
        }).catch((err: unknown) => {
          if (link === opening) link = undefined;
          throw new Error(`cannot connect to ${broker} at ${where}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        });
        link = opening;
      }
      return link;
    },
    async close() {
      closed = true;
      const opened = link;
      link = undefined;
      const live = await opened?.catch(() => undefined);
      if (live !== undefined) await end(live).catch(() => undefined);
    },
  };
}
