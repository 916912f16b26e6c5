export { createLogger, type Logger, type LoggerOptions } from './logger';
export { createMetrics, recordSpend, renderMetrics, scrapedGauge, type Metrics } from './metrics';
export {
  inActiveContext,
  inUnsampledTrace,
  nameServerSpan,
  startTelemetry,
  type Telemetry,
  type TelemetryOptions,
} from './telemetry';
export {
  runCheck,
  runChecks,
  startOpsServer,
  type OpsServer,
  type OpsServerOptions,
  type ReadinessCheck,
} from './ops-server';
