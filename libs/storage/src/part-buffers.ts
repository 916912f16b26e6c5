// The part buffers of multipart uploads, bounded per process: every upload of the process (the edge's files route, an
// archive of unknown length) fills and sends its parts from one pool, so memory for parts is at most the pool's
// capacity × the part size however many uploads run at once. An upload that needs a buffer while all are lent waits
// for one; it stops reading its body meanwhile, which pushes back on the client's socket (the edge's idle deadline
// does not count a pause of its own making: body-deadline.ts).

/** S3's smallest part but the last: every part buffer is this size. */
export const UPLOAD_PART_SIZE = 5 * 1024 * 1024;

/**
 * Buffers a process lends out at once: 60 MiB. With three buffers per upload, the files bench's 10 concurrent 25 MiB
 * uploads raised the edge's RSS by 145–170 MiB over idle (target < +100); with this bound by 56–76 MiB, and neither a
 * lone upload nor ten at once went slower in alternated runs. Three buffers are one upload at full speed (two parts
 * in flight, one filling), so a lone upload never waits.
 */
export const UPLOAD_PART_BUFFERS = 12;

interface Waiter {
  resolve: (buffer: Buffer) => void;
  reject: (error: unknown) => void;
  signal?: AbortSignal;
  onAbort: () => void;
}

/**
 * At most `capacity` buffers of `size` bytes lent at a time, allocated on first need and kept for reuse. Waiters are
 * served first come, first served. Each buffer goes back exactly once: `release` when nothing reads it any more (its
 * part was sent, or never sent), `discard` when a failed request may still be writing it (its slot is freed and the
 * buffer left to the garbage collector, never lent again).
 */
export class PartBufferPool {
  private readonly free: Buffer[] = [];
  private readonly lent = new Set<Buffer>();
  private readonly waiters: Waiter[] = [];

  constructor(
    readonly capacity: number = UPLOAD_PART_BUFFERS,
    readonly size: number = UPLOAD_PART_SIZE,
  ) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`a part buffer pool needs a capacity of at least 1, not ${capacity}`);
  }

  /** Buffers lent now. */
  get inUse(): number {
    return this.lent.size;
  }

  /** Uploads waiting for a buffer now. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** A buffer of its own for the caller; waits while all are lent. Rejects with the signal's reason once it aborts. */
  acquire(signal?: AbortSignal): Promise<Buffer> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.waiters.length === 0 && this.lent.size < this.capacity) return Promise.resolve(this.lend(this.free.pop() ?? Buffer.allocUnsafe(this.size)));
    return new Promise<Buffer>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          reject(signal!.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Gives `buffer` back for reuse: the next waiter gets it at once. */
  release(buffer: Buffer): void {
    this.take(buffer);
    this.free.push(buffer);
    this.serve();
  }

  /** Gives `buffer`'s slot back but not the buffer, which may still be read by a request that failed. */
  discard(buffer: Buffer): void {
    this.take(buffer);
    this.serve();
  }

  private lend(buffer: Buffer): Buffer {
    this.lent.add(buffer);
    return buffer;
  }

  private take(buffer: Buffer): void {
    // A buffer given back twice would be lent to two uploads at once, each overwriting the other's part.
    if (!this.lent.delete(buffer)) throw new Error('this part buffer is not lent from this pool (given back twice?)');
  }

  private serve(): void {
    while (this.waiters.length > 0 && this.lent.size < this.capacity) {
      const waiter = this.waiters.shift()!;
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.resolve(this.lend(this.free.pop() ?? Buffer.allocUnsafe(this.size)));
    }
  }
}

/** The pool every upload of this process shares unless given its own (tests). */
export const processPartBuffers = new PartBufferPool();
