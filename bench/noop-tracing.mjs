// `node --import ./bench/noop-tracing.mjs bin/payhooks.js serve …`: registers the OpenTelemetry SDK before payhooks
// loads, every span sampled and handed to a batch span processor whose exporter drops them. What tracing costs the
// process (spans made, attributes set, context carried, batches formed), without the network or a collector's cost.
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

const dropping = {
  export(_spans, done) {
    done({ code: 0 });
  },
  async shutdown() {},
  async forceFlush() {},
};
new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] }).register();
