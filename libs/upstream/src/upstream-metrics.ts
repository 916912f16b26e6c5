// The upstream series of a process that calls channels (edge, evaluate-worker, task-runner): every call through
// withFailover, timed, by channel, model and outcome; and the circuit state of each channel it has called.
import { scrapedGauge, type Metrics } from '@gensvc/observability';
import type { CircuitBreaker, CircuitState } from './breaker';

const STATES: readonly CircuitState[] = ['closed', 'open', 'half_open'];

export function instrumentUpstream(breaker: CircuitBreaker, metrics: Metrics) {
  const names = new Map<string, string>();
  breaker.onCall = (call) => {
    names.set(call.channelId, call.channel);
    metrics.upstreamRequests.observe({ channel: call.channel, model: call.model, outcome: call.outcome }, call.seconds);
  };
  scrapedGauge(
    metrics,
    {
      name: 'gensvc_circuit_breaker_state',
      help:
        'Circuit-breaker state of each channel this process has called ' +
        '(1 for its current state among closed, open, half_open).',
      labelNames: ['channel', 'state'] as const,
    },
    () =>
      [...names].flatMap(([id, channel]) => {
        const current = breaker.state(id);
        return STATES.map((state) => ({ labels: { channel, state }, value: state === current ? 1 : 0 }));
      }),
  );
}
