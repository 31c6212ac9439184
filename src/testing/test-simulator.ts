import { EVENT_TYPES, type EventType } from '../events/index.js';
import { createDefaultScheme, type SignatureScheme, withSimulatedClock } from '../signature/index.js';
import type { ClockAdvance } from '../simulator/clock.js';
import type { FlowOverrides } from '../simulator/flow-overrides.js';
import { type FlowName, type FlowResult, runFlow, type Simulator, type SimulatorOptions, startSimulator } from '../simulator/index.js';

/** Options of {@link startTestSimulator}: the simulator's own, plus the receiver to register. */
export interface TestSimulatorOptions extends SimulatorOptions {
  /** Register a webhook endpoint at this URL (https, or http on localhost / 127.0.0.1). */
  forwardTo?: string | undefined;
  /** The types that endpoint receives. Default: every type. */
  events?: readonly EventType[] | undefined;
}

/** A simulator started for a test, with the helpers a test needs most. */
export interface TestSimulator {
  readonly simulator: Simulator;
  /** Its base URL (a free port on 127.0.0.1). */
  readonly url: string;
  /** The staging key the helpers use (`sk_test_testing`). */
  readonly apiKey: string;
  /** The `forwardTo` endpoint and its signing secret; undefined without `forwardTo`. */
  readonly endpoint: { id: string; secret: string } | undefined;
  /**
   * Runs a flow with overrides (`{ 'invoice.amount': '777' }` is short for `{ set: { … } }`) and waits until its
   * deliveries have been made (retries of failed ones wait on the clock).
   */
  trigger(flow: FlowName, overrides?: FlowOverrides | Readonly<Record<string, string>>): Promise<FlowResult>;
  /** Moves the manual clock (`clock: 'manual'`) by a duration such as `'1d'` or ms; the retries due on the way run, in order. */
  advance(by: string | number): Promise<ClockAdvance>;
  /**
   * The default scheme with the endpoint's secret, measuring signature age against this simulator's clock (test
   * only): give it to the receiver under test, so deliveries signed days ahead on the manual clock verify.
   */
  scheme(): SignatureScheme;
  close(): Promise<void>;
}

const TEST_API_KEY = 'sk_test_testing';

/**
 * Starts a simulator on a free port for a vitest test, optionally registers the receiver under test as an endpoint,
 * and hands back helpers: trigger a flow with overrides, advance the clock, the scheme to verify with.
 *
 * @example
 * const sim = await startTestSimulator({ clock: 'manual', forwardTo: `${receiverUrl}/webhooks` });
 * const hooks = createPayhooks({ scheme: sim.scheme(), database: { dataDir: 'memory://' } });
 * await sim.trigger('cash-payment', { 'invoice.amount': '777' });
 * await sim.advance('1d');
 * await sim.close();
 */
export async function startTestSimulator(options: TestSimulatorOptions = {}): Promise<TestSimulator> {
  const { forwardTo, events, ...simulatorOptions } = options;
  const simulator = await startSimulator({ port: 0, ...simulatorOptions });
  let endpoint: { id: string; secret: string } | undefined;
  try {
    if (forwardTo !== undefined) endpoint = await register(simulator, forwardTo, events);
  } catch (err) {
    await simulator.close();
    throw err;
  }
  return {
    simulator,
    url: simulator.url,
    apiKey: TEST_API_KEY,
    endpoint,
    async trigger(flow, overrides) {
      const asOverrides = overrides === undefined || isFlowOverrides(overrides) ? overrides : { set: overrides };
      const result = await runFlow(flow, { baseUrl: simulator.url, apiKey: TEST_API_KEY, overrides: asOverrides });
      await simulator.idle();
      return result;
    },
    advance: (by) => simulator.clock.advance(by),
    scheme() {
      if (!endpoint) throw new TypeError('scheme() needs the endpoint: start the test simulator with forwardTo.');
      return withSimulatedClock(createDefaultScheme({ secrets: [endpoint.secret] }), () => simulator.clock.now());
    },
    close: () => simulator.close(),
  };
}

function isFlowOverrides(value: FlowOverrides | Readonly<Record<string, string>>): value is FlowOverrides {
  return ['set', 'add', 'remove'].some((key) => Object.hasOwn(value, key));
}

async function register(
  simulator: Simulator,
  url: string,
  events: readonly EventType[] | undefined,
): Promise<{ id: string; secret: string }> {
  const headers = { authorization: `Bearer ${TEST_API_KEY}`, 'content-type': 'application/json' };
  const created = await fetch(`${simulator.url}/v1/webhooks`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ input: { url, description: 'payhooks/testing', enabledEvents: [...(events ?? EVENT_TYPES)] } }),
  });
  const body = (await created.json()) as { id?: string; error?: { message: string } };
  if (!created.ok || !body.id) throw new TypeError(`forwardTo was refused: ${body.error?.message ?? `HTTP ${created.status}`}`);
  const secret = (await (await fetch(`${simulator.url}/v1/webhooks/${body.id}/secret`, { headers })).json()) as { secret: string };
  return { id: body.id, secret: secret.secret };
}
