import type { EventType } from '../events/index.js';
import type { SimulatorClock } from './clock.js';
import type { DeliveryQueue } from './deliveries.js';
import type { ResolvedSimulatorOptions } from './options.js';
import type { SimulatorState } from './state.js';

/** An event the simulator emitted, as delivered: `{eventId, eventType, data}`. */
export interface EmittedEvent {
  eventId: string;
  eventType: EventType;
  data: unknown;
}

/** What the route modules share: the state, the outgoing deliveries and the options. */
export interface SimulatorContext {
  state: SimulatorState;
  deliveries: DeliveryQueue;
  options: ResolvedSimulatorOptions;
  /** The simulator's time (real or manual): every date it writes and every retry it schedules reads it. */
  clock: SimulatorClock;
  /** Sends an event to every endpoint subscribed to its type; resolves nothing, deliveries go on in the background. */
  emit(eventType: EventType, data: unknown): EmittedEvent;
  /** Every event emitted so far, oldest first. */
  events(): readonly EmittedEvent[];
}
