export interface BreakerOptions {
  /** Consecutive failures that open a channel's circuit. */
  failureThreshold?: number;
  /** How long an open circuit skips its channel before one trial call is let through. */
  openMs?: number;
  now?: () => number;
}

/**
 * Told of this process's own changes of a channel's circuit, to share them with other replicas (SharedUpstreamState).
 */
export interface BreakerListener {
  /** A call to the channel failed (counted across replicas: consecutive failures anywhere open it everywhere). */
  failed(channelId: string): void;
  opened(channelId: string, at: number): void;
  closed(channelId: string): void;
}

export type CircuitState = 'closed' | 'open' | 'half_open';

/** One call to one channel as withFailover saw it: for the upstream metrics (channel name, model id, outcome). */
export interface ChannelCallReport {
  channelId: string;
  /** The channel's name: the metrics label. */
  channel: string;
  model: string;
  outcome: 'ok' | 'failover' | 'rejected' | 'invalid_response' | 'aborted';
  seconds: number;
}

interface ChannelHealth {
  failures: number;
  openedAt: number | null;
  /** A half-open trial is in flight: other calls keep skipping the channel until it reports. */
  trial: boolean;
}

/**
 * Circuit breaker per channel: after `failureThreshold` consecutive failures the channel is skipped for `openMs`,
 * then one trial call decides whether it closes again (success) or stays open for another period. Decisions are
 * taken on this process's state (no store round trip on the hot path); with a listener (SharedUpstreamState) its
 * changes are shared with the other replicas, whose changes arrive through openedElsewhere / closedElsewhere.
 */
export class CircuitBreaker {
  private readonly health = new Map<string, ChannelHealth>();
  private readonly now: () => number;
  private listener: BreakerListener | null = null;
  readonly threshold: number;
  readonly openMs: number;

  constructor(options: BreakerOptions = {}) {
    this.threshold = options.failureThreshold ?? 5;
    this.openMs = options.openMs ?? 30_000;
    this.now = options.now ?? Date.now;
  }

  setListener(listener: BreakerListener | null) {
    this.listener = listener;
  }

  /**
   * Every call withFailover makes through this breaker (which judges each of them) is also reported here, timed:
   * the one hook shared by every upstream caller (chat proxy, image edits, evaluate, task submission).
   */
  onCall: ((call: ChannelCallReport) => void) | null = null;

  /** The circuit of one channel as this process sees it. */
  state(channelId: string): CircuitState {
    const h = this.health.get(channelId);
    if (!h || h.openedAt === null) return 'closed';
    return h.trial || this.now() - h.openedAt >= this.openMs ? 'half_open' : 'open';
  }

  /** Every channel whose circuit is not closed here, for metrics. */
  notClosed(): [string, CircuitState][] {
    return [...this.health.keys()]
      .map((id) => [id, this.state(id)] as [string, CircuitState])
      .filter(([, s]) => s !== 'closed');
  }

  /**
   * Another replica opened the channel's circuit at `at` (or its failures, counted with ours, reached the threshold).
   */
  openedElsewhere(channelId: string, at: number) {
    const h = this.health.get(channelId) ?? { failures: 0, openedAt: null, trial: false };
    if (h.openedAt !== null && h.openedAt >= at) return;
    h.openedAt = at;
    h.failures = Math.max(h.failures, this.threshold);
    this.health.set(channelId, h);
  }

  /** Another replica's call succeeded: the channel is healthy again (a trial of ours in flight still reports). */
  closedElsewhere(channelId: string) {
    const h = this.health.get(channelId);
    if (h && !h.trial) this.health.delete(channelId);
  }

  /** Whether a call may go to the channel now; claims the half-open trial when its time has come. */
  tryAcquire(channelId: string): boolean {
    const h = this.health.get(channelId);
    if (!h || h.openedAt === null) return true;
    if (h.trial || this.now() - h.openedAt < this.openMs) return false;
    h.trial = true;
    return true;
  }

  isOpen(channelId: string): boolean {
    const h = this.health.get(channelId);
    return !!h && h.openedAt !== null && (h.trial || this.now() - h.openedAt < this.openMs);
  }

  /** Gives back a claimed half-open trial without judging the channel (the call never made, or cut by the caller). */
  release(channelId: string): void {
    const h = this.health.get(channelId);
    if (h) h.trial = false;
  }

  success(channelId: string): void {
    // Only a change is shared: a healthy channel's successes cost nothing beyond the map look-up.
    if (this.health.delete(channelId)) this.listener?.closed(channelId);
  }

  failure(channelId: string): void {
    const h = this.health.get(channelId) ?? { failures: 0, openedAt: null, trial: false };
    h.failures += 1;
    const opens = h.trial || h.failures >= this.threshold;
    if (opens) h.openedAt = this.now();
    h.trial = false;
    this.health.set(channelId, h);
    this.listener?.failed(channelId);
    if (opens) this.listener?.opened(channelId, h.openedAt!);
  }
}
