// The `payhooks/testing` entry: realistic events and signed deliveries for the tests of apps that use payhooks.
// Each export by name; test/public-surface.snapshot.json lists the run-time ones.

export { EDGE_CASE_EVENTS, EXAMPLE_EVENTS, exampleEvent } from '../events/index.js';
export { signedRequest, type SignedRequest, type SignedRequestOptions } from './signed-request.js';
export { SIMULATED_TIME_HEADER, withSimulatedClock } from '../signature/index.js';
export { startTestSimulator, type TestSimulator, type TestSimulatorOptions } from './test-simulator.js';
