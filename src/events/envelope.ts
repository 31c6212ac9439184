import { z } from 'zod';

/** The delivery envelope: all the receiver checks before storing. */
export const envelopeSchema = z.looseObject({
  eventId: z.string().trim().min(1, 'must be a non-empty string'),
  eventType: z.string().trim().min(1, 'must be a non-empty string'),
  data: z.record(z.string(), z.unknown()),
});
export type Envelope = { eventId: string; eventType: string; data: Record<string, unknown> };
