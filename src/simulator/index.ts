// The `payhooks/simulator` entry: a local emulation of the Payment Collection Service (REST endpoints and signed
// deliveries with the sender's retries), and one-off signed deliveries. Each export by name;
// test/public-surface.snapshot.json lists the run-time ones.

export { startSimulator, type Simulator } from './start-simulator.js';
export {
  RETRY_DELAYS_MS,
  SIMULATOR_DEFAULTS,
  SimulatorOptionError,
  seededRandom,
  type RandomSource,
  type ResolvedSimulatorOptions,
  type SimulatorOptions,
} from './options.js';
export type { DeliveryAttempt, DeliveryPost, DeliveryStatus, DeliveryRecordFilter, DeliveryRecord } from './deliveries.js';
export type { EmittedEvent } from './context.js';
export type { SimulatorOrganization } from './organizations.js';
export type { RequestLogEntry } from './request-log.js';
export { signDelivery } from './sign-delivery.js';
export type { ClockAdvance, ClockMode, SimulatorClockControl } from './clock.js';
export type { SandboxAdvance, SandboxAdvanceInput, SandboxClock } from './clock-routes.js';
export { FlowOverrideError, type FlowOverrides } from './flow-overrides.js';
export { sendSigned, signBody, type SendScheme, type SendSignedOptions, type SendSignedResult } from './send-signed.js';
export type { SimulatorSnapshot } from './state-file.js';
export { triggerEvent, type TriggerOptions, type TriggerResult } from './trigger.js';
export { buildOpenApiDocument, openApiYaml, type OpenApiDocument } from './openapi.js';
export type { Route } from './route.js';
export {
  FLOW_DESCRIPTIONS,
  FLOW_NAMES,
  FlowError,
  runFlow,
  type FlowDescription,
  type FlowEvent,
  type FlowName,
  type FlowResult,
  type FlowStep,
  type RunFlowOptions,
} from './flows.js';
export { createSandboxClient, type SandboxClient, type SandboxClientOptions } from './sandbox-client.js';
export type {
  SandboxCompleteInput,
  SandboxCreateSubscriptionInput,
  SandboxCycleResponse,
  SandboxDispute,
  SandboxEvent,
  SandboxOpenDisputeInput,
  SandboxPaymentMethod,
  SandboxSavePaymentMethodInput,
  SandboxRefundInput,
  SandboxRefundResponse,
  SandboxResolveDisputeInput,
  SandboxRespondDisputeInput,
  SandboxSubscription,
} from './sandbox-contract.js';
export type {
  SimCustomer,
  SimDispute,
  SimInvoice,
  SimInvoiceItem,
  SimPayment,
  SimRefund,
  SimSubscription,
  SimulatorRecords,
} from './state.js';
