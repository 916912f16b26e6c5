// Postgres and Redis spans only inside a recorded trace (issue 12: pg's and ioredis's instrumentations cost the
// workers 10–13 % of their CPU even when nothing was recorded). Not recorded — an undrawn request's bare context, a
// job whose producer's trace was not drawn, or no trace at all — a query or command goes straight to the driver:
// no attributes, no span, no callback binding, no duration metric. Inside a recorded trace each takes the
// instrumentation's full path, so a recorded trace stays whole.
//
// Each override wraps a patch factory of the pinned instrumentation version (package.json pins it exactly): the
// factory's patched function is built once, and the check picks it or the driver's own per call. The trace tests
// (telemetry.test.ts, services/fleet task-traces) check recorded and unrecorded work alike.
import { context, isSpanContextValid, trace, TraceFlags, type Context } from '@opentelemetry/api';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';

/** True when the active context holds a span of a sampled trace (the only place a client span is recorded). */
function inRecordedTrace(): boolean {
  const parent = trace.getSpanContext(context.active());
  return parent !== undefined && (parent.traceFlags & TraceFlags.SAMPLED) !== 0;
}

/** True when `ctx` is inside a trace that was not drawn: a valid span context without the sampled flag. */
export function inUnsampledTrace(ctx: Context): boolean {
  const span = trace.getSpanContext(ctx);
  return span !== undefined && isSpanContextValid(span) && (span.traceFlags & TraceFlags.SAMPLED) === 0;
}

type Fn = (this: unknown, ...args: unknown[]) => unknown;
type PatchFactory = (this: unknown, ...args: unknown[]) => (original: Fn) => Fn;

/**
 * Replaces `proto[name]`, a patch factory, with one whose patched function runs the driver's own outside a recorded
 * trace. `bindCallback`: a callback passed outside one is bound to the caller's context, as the full path binds it
 * (pg-pool calls a waiting caller's connect callback from whichever caller released a client, maybe in a recorded
 * trace, and the query it then runs must not land in that trace).
 */
function onlyInRecordedTrace(proto: object, name: string, bindCallback = false): void {
  const factories = proto as Record<string, PatchFactory>;
  const full = factories[name];
  if (typeof full !== 'function') throw new Error(`lean instrumentation: ${proto.constructor.name}.${name} is missing (instrumentation upgraded?)`);
  factories[name] = function (...factoryArgs) {
    const patch = full.apply(this, factoryArgs);
    return (original) => {
      const traced = patch(original);
      return function (this: unknown, ...args: unknown[]) {
        if (inRecordedTrace()) return traced.apply(this, args);
        if (bindCallback && typeof args[0] === 'function') args[0] = context.bind(context.active(), args[0]);
        return original.apply(this, args);
      };
    };
  };
}

export class LeanPgInstrumentation extends PgInstrumentation {}
onlyInRecordedTrace(LeanPgInstrumentation.prototype, '_getClientQueryPatch');
onlyInRecordedTrace(LeanPgInstrumentation.prototype, '_getClientConnectPatch', true);
onlyInRecordedTrace(LeanPgInstrumentation.prototype, '_getPoolConnectPatch', true);

export class LeanIORedisInstrumentation extends IORedisInstrumentation {}
for (const name of ['_patchSendCommand', '_patchConnection']) onlyInRecordedTrace(LeanIORedisInstrumentation.prototype, name);
