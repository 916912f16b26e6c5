export interface BreakerOptions {
  /** Consecutive failures that open a channel's circuit. */
  failureThreshold?: number;
  /** How long an open circuit skips its channel before one trial call is let through. */
  openMs?: number;
  now?: () => number;
}

interface ChannelHealth {
  failures: number;
  openedAt: number | null;
  /** A half-open trial is in flight: other calls keep skipping the channel until it reports. */
  trial: boolean;
}

/**
 * Per-process circuit breaker per channel: after `failureThreshold` consecutive failures the channel is skipped for
 * `openMs`, then one trial call decides whether it closes again (success) or stays open for another period.
 */
export class CircuitBreaker {
  private readonly health = new Map<string, ChannelHealth>();
  private readonly threshold: number;
  private readonly openMs: number;
  private readonly now: () => number;

  constructor(options: BreakerOptions = {}) {
    this.threshold = options.failureThreshold ?? 5;
    this.openMs = options.openMs ?? 30_000;
    this.now = options.now ?? Date.now;
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

  /** Gives back a claimed half-open trial without judging the channel (the call was never made, or was cut short by the caller). */
  release(channelId: string): void {
    const h = this.health.get(channelId);
    if (h) h.trial = false;
  }

  success(channelId: string): void {
    this.health.delete(channelId);
  }

  failure(channelId: string): void {
    const h = this.health.get(channelId) ?? { failures: 0, openedAt: null, trial: false };
    h.failures += 1;
    if (h.trial || h.failures >= this.threshold) h.openedAt = this.now();
    h.trial = false;
    this.health.set(channelId, h);
  }
}
