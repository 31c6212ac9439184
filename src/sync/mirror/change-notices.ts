import { sql } from 'kysely';
import { z } from 'zod';
import { storableText } from '../../internal/storable-text.js';
import { handlerOutcome } from '../../store/outcomes.js';
import { DeadLetterError } from '../../worker/handler-errors.js';
import { eventTypesField, sinkNameField } from '../config-fields.js';
import { eventResource } from '../resource-state.js';
import { defineSinkKind, type Sink, type SinkSetup } from '../sink.js';
import { MIRROR_DEFAULTS } from './mirror-sink.js';

/** What a change notice carries: ids only, never the resource's data (read the mirror's row for that). */
export interface MirrorChangeNotice {
  /** The account whose row changed: the mirror's rows are keyed by (account, id). */
  account: string;
  /** `customer`, `invoice`, `payment`, `dispute` or `subscription`. */
  kind: string;
  id: string;
  eventId: string;
}

const options = z
  .strictObject({
    /** Completion is recorded under `notify:<name>`. Default `mirror`. */
    name: sinkNameField.default('mirror'),
    /** The channel an app `LISTEN`s on: a plain lower-case identifier, so that it needs no quoting there either. */
    channel: z
      .string()
      .regex(
        /^[a-z_][a-z0-9_]{0,62}$/,
        'expected a channel name of lower-case letters, digits and underscores (at most 63), starting with a letter or underscore',
      ),
    eventTypes: eventTypesField.optional(),
  })
  .transform((parsed) => ({ kind: 'pg-notify' as const, ...parsed }));

/**
 * Postgres change notices for the mirror: once the mirror's write of an event has committed, `pg_notify(channel,
 * '{"account":…,"kind":…,"id":…,"eventId":…}')` for the event's resource, so that an app reacts to mirror changes with `LISTEN`
 * instead of polling. It runs as its own handler after the mirror's (registered after it, on the same database):
 * while the mirror has not settled the event it fails and is retried, and when the mirror gave up on it, it gives up
 * too. The notice is sent in the transaction that records its completion: at least once, ids only.
 */
function changeNotices(settings: z.output<typeof options>, setup: SinkSetup): Sink {
  if (!setup.mirrorSchema) {
    throw new Error(
      `The pg-notify sink ${JSON.stringify(settings.name)} sends the mirror's change notices, and the mirror is off: turn it on (mirror: true).`,
    );
  }
  return {
    kind: 'pg-notify',
    name: `notify:${settings.name}`,
    eventTypes: settings.eventTypes,
    describe: `Postgres change notices of the mirror on channel ${settings.channel}`,
    async handle(event, ctx) {
      const resource = eventResource(event);
      if (!resource) return;
      const mirrored = await handlerOutcome(setup.store.db, { account: ctx.account, eventId: event.eventId }, MIRROR_DEFAULTS.handlerName);
      if (mirrored === 'dead') throw new DeadLetterError('the mirror gave up on this event: no change of it to announce');
      if (mirrored === null) throw new Error('the mirror has not written this event yet; the notice waits for it');
      // The id as the mirror's row holds it, so that the app finds the row the notice names.
      const notice: MirrorChangeNotice = {
        account: ctx.account,
        kind: resource.kind,
        id: storableText(resource.id),
        eventId: event.eventId,
      };
      await ctx.transaction(async (trx) => {
        await sql`select pg_notify(${settings.channel}, ${JSON.stringify(notice)})`.execute(trx);
      });
    },
    async close() {},
  };
}

/** The `pg-notify` sink kind (docs/mirror.md#change-notices), in `sinks`. */
export const changeNoticesKind = defineSinkKind({ kind: 'pg-notify', prefix: 'notify', schema: options, create: changeNotices });
