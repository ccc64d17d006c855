/**
 * OpenTelemetry traces for the API and the worker: one trace follows a buyer's request from the HTTP route through
 * the workflow update, its activities and the gateway's HTTP call. Exported by OTLP/HTTP when
 * OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; otherwise no provider is started, the
 * OpenTelemetry API stays a no-op and nothing in the request path pays for tracing.
 *
 * Read here from the environment given (validated): the endpoints, OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL
 * (`http/protobuf`, the OTLP default, or `http/json`), OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_TRACES_SAMPLER(+_ARG), OTEL_TRACES_EXPORTER (`otlp` or `none`) and OTEL_SDK_DISABLED. The SDK itself reads the
 * rest from the process environment: OTEL_EXPORTER_OTLP_HEADERS (credentials: never logged), timeouts, OTEL_BSP_*.
 */
import { context, propagation, type Tracer, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { type IResource, Resource } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { z } from 'zod';

export type TracedService = 'ticketing-api' | 'ticketing-worker';

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

const blankAsUnset = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankAsUnset, schema.optional());

const TracingEnvSchema = z.object({
  OTEL_SDK_DISABLED: optional(z.enum(['true', 'false'])),
  OTEL_TRACES_EXPORTER: optional(z.enum(['otlp', 'none'])),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(z.string().url()),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional(z.string().url()),
  OTEL_EXPORTER_OTLP_PROTOCOL: optional(z.enum(['http/protobuf', 'http/json'])),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: optional(z.enum(['http/protobuf', 'http/json'])),
  OTEL_SERVICE_NAME: optional(z.string().min(1)),
  OTEL_RESOURCE_ATTRIBUTES: optional(z.string()),
  OTEL_TRACES_SAMPLER: optional(z.enum(SAMPLERS)),
  OTEL_TRACES_SAMPLER_ARG: optional(z.coerce.number().min(0).max(1)),
});

export interface TracingSettings {
  /** Where spans are POSTed (the `/v1/traces` URL). */
  tracesUrl: string;
  protocol: 'http/protobuf' | 'http/json';
  serviceName: string;
  resourceAttributes: Record<string, string>;
  sampler: (typeof SAMPLERS)[number];
  samplerRatio: number;
}

/**
 * The tracing settings of an environment, or null when traces are off (no endpoint, exporter `none`, SDK disabled).
 * A malformed variable is an error naming it: a typo must not silently switch tracing off.
 */
export function tracingSettingsFrom(
  service: TracedService,
  env: Record<string, string | undefined> = process.env,
): TracingSettings | null {
  const parsed = TracingEnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new Error(`invalid OpenTelemetry configuration: ${problems}`);
  }
  const vars = parsed.data;
  if (vars.OTEL_SDK_DISABLED === 'true' || vars.OTEL_TRACES_EXPORTER === 'none') return null;
  const tracesUrl =
    vars.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (vars.OTEL_EXPORTER_OTLP_ENDPOINT ? `${vars.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : null);
  if (tracesUrl === null) return null;
  return {
    tracesUrl,
    protocol: vars.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? vars.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    serviceName: vars.OTEL_SERVICE_NAME ?? service,
    resourceAttributes: parseResourceAttributes(vars.OTEL_RESOURCE_ATTRIBUTES ?? ''),
    sampler: vars.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on',
    samplerRatio: vars.OTEL_TRACES_SAMPLER_ARG ?? 1,
  };
}

/** `key=value,key2=value2`, values percent-encoded (OpenTelemetry's resource SDK specification). */
function parseResourceAttributes(text: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    try {
      attributes[key] = decodeURIComponent(value);
    } catch {
      attributes[key] = value;
    }
  }
  return attributes;
}

function samplerFor(settings: TracingSettings): Sampler {
  const ratio = new TraceIdRatioBasedSampler(settings.samplerRatio);
  switch (settings.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** A started tracer provider: what the Temporal worker's span sink and the Fastify instrumentation attach to. */
export interface Tracing {
  readonly settings: TracingSettings;
  readonly provider: NodeTracerProvider;
  readonly resource: IResource;
  /** The processor workflow spans (built inside the workflow sandbox) are handed to by the worker's sink. */
  readonly spanProcessor: SpanProcessor;
  tracer(name: string): Tracer;
  /** Exports what is buffered now (tests; before a deliberate stop). */
  flush(): Promise<void>;
  /** Exports what is buffered and unregisters the provider; called last on SIGTERM/SIGINT. */
  shutdown(): Promise<void>;
}

let active: Tracing | null = null;

/** The process's tracing, when it was started: other modules add their instrumentation only then. */
export const activeTracing = (): Tracing | null => active;

/**
 * Starts and registers (as the global OpenTelemetry provider, with W3C trace-context propagation and an async-local
 * context manager) the process's tracer provider, or returns null when the environment does not ask for traces.
 * Call it once, before the Temporal client, the worker or the Fastify app are built.
 */
export function startTracing(
  service: TracedService,
  env: Record<string, string | undefined> = process.env,
): Tracing | null {
  if (active) return active;
  const settings = tracingSettingsFrom(service, env);
  if (!settings) return null;
  const resource = Resource.default().merge(
    new Resource({ ...settings.resourceAttributes, [ATTR_SERVICE_NAME]: settings.serviceName }),
  );
  const exporter =
    settings.protocol === 'http/json'
      ? new JsonTraceExporter({ url: settings.tracesUrl })
      : new ProtobufTraceExporter({ url: settings.tracesUrl });
  const spanProcessor = new BatchSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ resource, sampler: samplerFor(settings), spanProcessors: [spanProcessor] });
  provider.register();
  const tracing: Tracing = {
    settings,
    provider,
    resource,
    spanProcessor,
    tracer: (name) => provider.getTracer(name),
    flush: () => provider.forceFlush(),
    async shutdown() {
      if (active === tracing) active = null;
      await provider.shutdown();
      // The global API goes back to no-ops, so a later provider (another test) can register.
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
  active = tracing;
  return tracing;
}
