export { createLogger, type Logger, type LoggerOptions } from './logger';
export { createMetrics, renderMetrics, type Metrics } from './metrics';
export { startTelemetry, type Telemetry, type TelemetryOptions } from './telemetry';
