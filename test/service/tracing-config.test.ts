// Issue 28: when serve traces (the OTEL_* variables, the configuration file), what it says when the SDK is missing, and
// the trace context helpers the receiver and the worker rely on. No SDK is registered here (the unit tier shares one
// module graph): the spans themselves are tested in test/service/tracing-tree.test.ts and test/cli/serve-tracing.test.ts.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { inSpan, linksTo, traceParentOf, validTraceParent } from '../../src/internal/tracing.js';
import { readEnv } from '../../src/service/environment.js';
import { resolveServiceConfig, ServiceConfigError, tracingExporters } from '../../src/service/resolve-service-config.js';
import { defineServiceConfig } from '../../src/service/service-config.js';
import { loadTracingPackage, startTracing, TracingSetupError } from '../../src/service/start-tracing.js';

const folder = () => mkdtempSync(join(tmpdir(), 'payhooks-tracing-config-'));
const silent = pino({ level: 'silent' });

describe('when serve traces', () => {
  it('is off by default, and the standard variables turn it on, the file second, an OTLP endpoint alone last', () => {
    expect(tracingExporters({}, undefined)).toEqual([]);
    expect(tracingExporters({ OTEL_TRACES_EXPORTER: ['otlp'] }, undefined)).toEqual(['otlp']);
    expect(tracingExporters({ OTEL_TRACES_EXPORTER: ['otlp', 'console', 'otlp'] }, undefined)).toEqual(['otlp', 'console']);
    expect(tracingExporters({}, 'console')).toEqual(['console']);
    expect(tracingExporters({}, 'none')).toEqual([]);
    // The variable over the file, either way.
    expect(tracingExporters({ OTEL_TRACES_EXPORTER: ['none'] }, 'otlp')).toEqual([]);
    expect(tracingExporters({ OTEL_TRACES_EXPORTER: ['console'] }, 'otlp')).toEqual(['console']);
    // An endpoint means OTLP, unless something says otherwise.
    expect(tracingExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, undefined)).toEqual(['otlp']);
    expect(tracingExporters({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, undefined)).toEqual(['otlp']);
    expect(tracingExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'none')).toEqual([]);
    // OTEL_SDK_DISABLED=true wins over everything.
    expect(tracingExporters({ OTEL_SDK_DISABLED: true, OTEL_TRACES_EXPORTER: ['otlp'] }, 'console')).toEqual([]);
  });

  it('reads the variables as the OpenTelemetry specification spells them, and refuses an exporter it does not support by name', () => {
    expect(readEnv('serve', { OTEL_TRACES_EXPORTER: ' OTLP , console ' }).OTEL_TRACES_EXPORTER).toEqual(['otlp', 'console']);
    expect(readEnv('serve', { OTEL_TRACES_EXPORTER: '' }).OTEL_TRACES_EXPORTER).toBeUndefined();
    expect(readEnv('serve', { OTEL_SDK_DISABLED: 'TRUE' }).OTEL_SDK_DISABLED).toBe(true);
    expect(readEnv('serve', { OTEL_SDK_DISABLED: 'false' }).OTEL_SDK_DISABLED).toBe(false);
    expect(() => readEnv('serve', { OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(
      'OTEL_TRACES_EXPORTER must name otlp, console or none (comma-separated), not "zipkin"',
    );
    // An endpoint may hold a token: refused without being repeated.
    expect(() => readEnv('serve', { OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url secret-token' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT is not valid/,
    );
    expect(() => readEnv('serve', { OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url secret-token' })).not.toThrow(/secret-token/);
  });

  it('resolves into the service configuration, which the worker child is handed (the file key checked like the others)', async () => {
    const dir = folder();
    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ tracing: { exporter: 'console' } }));
    const env = { PAYHOOKS_WEBHOOK_SECRET: 'tracing-secret' };
    expect((await resolveServiceConfig({ env, cwd: dir, simulatorSession: false })).tracing).toEqual({
      exporters: ['console'],
      trustIncomingContext: false,
    });
    const overridden = await resolveServiceConfig({ env: { ...env, OTEL_TRACES_EXPORTER: 'otlp' }, cwd: dir, simulatorSession: false });
    expect(overridden.tracing).toEqual({ exporters: ['otlp'], trustIncomingContext: false });
    expect((await resolveServiceConfig({ env, cwd: folder(), simulatorSession: false })).tracing).toEqual({
      exporters: [],
      trustIncomingContext: false,
    });
    expect(defineServiceConfig().tracing).toEqual({ exporters: [], trustIncomingContext: false });

    // Trusting a signed delivery's trace context: the file's key, alone or beside the exporter; a boolean only.
    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ tracing: { trustIncomingContext: true } }));
    expect((await resolveServiceConfig({ env, cwd: dir, simulatorSession: false })).tracing).toEqual({
      exporters: [],
      trustIncomingContext: true,
    });
    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ tracing: { exporter: 'otlp', trustIncomingContext: 'yes' } }));
    const notBoolean = await resolveServiceConfig({ env, cwd: dir, simulatorSession: false }).catch((err: unknown) => err);
    expect(notBoolean).toBeInstanceOf(ServiceConfigError);
    expect((notBoolean as Error).message).toMatch(/tracing\.trustIncomingContext/);

    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ tracing: { exporter: 'jaeger' } }));
    const refused = await resolveServiceConfig({ env, cwd: dir, simulatorSession: false }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ServiceConfigError);
    expect((refused as Error).message).toMatch(/tracing\.exporter/);
  });

  it('loads nothing when off, and names the packages to install when one is missing', async () => {
    expect(await startTracing({ exporters: [], trustIncomingContext: false }, { role: 'all', logger: silent })).toBeUndefined();
    const missing = await loadTracingPackage(
      // A package that is not installed, loaded the way the real ones are.
      () => import(['@opentelemetry', 'sdk-trace-missing'].join('/')),
      '@opentelemetry/sdk-trace-node',
      ['otlp'],
    ).catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(TracingSetupError);
    expect((missing as Error).message).toBe(
      'payhooks: Tracing is on (exporter otlp) but @opentelemetry/sdk-trace-node is not installed. Install the OpenTelemetry packages beside ' +
        'payhooks: npm install @opentelemetry/api @opentelemetry/sdk-trace-node @opentelemetry/resources @opentelemetry/exporter-trace-otlp-http ' +
        '(or turn tracing off: unset OTEL_TRACES_EXPORTER, or set it to none).',
    );
    const consoleOnly = await loadTracingPackage(() => import(['@opentelemetry', 'sdk-trace-missing'].join('/')), 'x', ['console']).catch(
      (err: unknown) => err as Error,
    );
    // The OTLP exporter is only needed for otlp.
    expect((consoleOnly as Error).message).not.toContain('exporter-trace-otlp-http');
  });
});

describe('the trace context kept with an event', () => {
  it('keeps a W3C traceparent as it came, and nothing that is not one', () => {
    const header = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(validTraceParent(header)).toBe(header);
    expect(validTraceParent([header, 'other'])).toBe(header);
    for (const bad of [
      undefined,
      '',
      '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
    ]) {
      expect(validTraceParent(bad)).toBeUndefined();
    }
  });

  it('links an attempt to the span a stored traceparent names, and to nothing without one', () => {
    expect(linksTo('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toEqual([
      { context: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true } },
    ]);
    expect(linksTo(null)).toEqual([]);
    expect(linksTo('garbage')).toEqual([]);
  });

  it('without an SDK, a span belongs to no trace: nothing is propagated or stored of it', async () => {
    const parent = await inSpan('webhook.receive', {}, async (span) => traceParentOf(span));
    expect(parent).toBeUndefined();
    await expect(inSpan('x', {}, async () => Promise.reject(new Error('passed on')))).rejects.toThrow('passed on');
  });
});
