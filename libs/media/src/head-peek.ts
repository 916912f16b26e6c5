// A stream's first bytes, looked at before the rest flows on: what a file is (sniffMedia) is decided on its head
// while the rest waits upstream, so an upload or a download is never held whole to be typed.
import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * Holds back the first `headBytes` bytes (or all of a shorter stream), decides on them (decide may throw to refuse
 * the stream: the error destroys it), then passes every byte through; counts and hashes what passes.
 */
export class HeadPeek extends Transform {
  bytes = 0;
  private readonly hash = createHash('sha256');
  private head: Buffer[] = [];
  private headLength = 0;
  private decided = false;

  // Not named size, length or byteLength: SDKs read those off a stream body to guess its total length.
  constructor(
    private readonly headBytes: number,
    private readonly decide: (head: Buffer, complete: boolean) => void,
  ) {
    super();
  }

  /** The SHA-256 (hex) of every byte that passed; once the stream has ended. */
  digest(): string {
    return this.hash.digest('hex');
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
    this.bytes += chunk.length;
    this.hash.update(chunk);
    if (this.decided) return cb(null, chunk);
    this.head.push(chunk);
    this.headLength += chunk.length;
    if (this.headLength < this.headBytes) return cb();
    this.release(false, cb);
  }

  override _flush(cb: TransformCallback) {
    if (this.decided) return cb();
    this.release(true, cb);
  }

  private release(complete: boolean, cb: TransformCallback) {
    this.decided = true;
    const head = Buffer.concat(this.head);
    this.head = [];
    try {
      this.decide(head, complete);
    } catch (e) {
      return cb(e as Error);
    }
    cb(null, head);
  }
}
