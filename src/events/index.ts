export { envelopeSchema, MAX_IDENTIFIER_LENGTH, parseBodyJson, type Envelope } from './envelope.js';
export * from './event-data.js';
export {
  EVENT_DATA_SCHEMAS,
  EVENT_TYPES,
  isEventType,
  type EventMap,
  type EventType,
  type UnknownEvent,
  type WebhookEvent,
} from './event-types.js';
export { EDGE_CASE_EVENTS, EXAMPLE_EVENTS, exampleEvent } from './examples.js';
export { EventParseError, parseEvent, parseEventOrThrow, parseJsonEvent, type EventIssue, type ParseEventResult } from './parse-event.js';
export {
  amount as amountSchema,
  currency as currencySchema,
  dateTime as dateTimeSchema,
  metadataPairSchema,
  type Infer,
  type Known,
} from './primitives.js';
export { RESOURCE_KINDS, type ResourceKind, resourceKeyOf } from './resource-key.js';
export * from './resources.js';
export * from './rest-contract.js';
