// bench/files: upload throughput through the edge (POST /v1/files, multipart, streamed from the client, 25 MiB
// bodies made on the fly) against PutObject straight to the same S3 with the storage library's putObjectStream
// (the same part size and queue the edge uses, in this process), in the same run; and
// the edge's memory while 10 such uploads run at once.
//   c=1    UPLOADS uploads one after another, each way
//   c=10   10 uploads at once, each way (aggregate MiB/s), sampling the edge's RSS against its idle RSS
// The S3 is the stack's s3rver (in this process, so the load generator shares its core; both ways pay it alike).
// Usage: npm run bench -- files
import { randomUUID } from 'node:crypto';
import { startEdge } from './lib/processes.mjs';
import { rssMiB, rssSampler } from './lib/rss.mjs';
import { gensvc } from './lib/gensvc.mjs';
import { MiB, pdfStream, postMultipart } from './lib/upload.mjs';
import { seedKey, withStack } from './lib/stack.mjs';
import { printTable, ratio, verdict } from './lib/table.mjs';

const { loadConfig } = gensvc('config');
const { createS3, putObjectStream } = gensvc('storage');

const SIZE = 25 * MiB;
const UPLOADS = Number(process.env.UPLOADS ?? 4);
const PARALLEL = 10;
const TARGET_RSS_MIB = 100;

await withStack(async ({ env, db }) => {
  const { auth } = await seedKey(db, { unlimited: true });
  const { s3: settings } = loadConfig(env);
  const s3 = createS3(settings);
  const edge = await startEdge(env);
  try {
    const viaEdge = async () => {
      const r = await postMultipart(`${edge.url}/v1/files`, {
        headers: auth,
        fields: { purpose: 'input' },
        size: SIZE,
      });
      if (r.status !== 200 && r.status !== 201)
        throw new Error(
          `edge upload answered ${r.status}: ${r.text.slice(0, 300)}\nedge output:\n${edge.output().slice(-4000)}`,
        );
      const file = JSON.parse(r.text);
      if (file.bytes !== SIZE) throw new Error(`edge upload stored ${file.bytes} bytes, sent ${SIZE}`);
    };
    const direct = () =>
      putObjectStream(s3, {
        bucket: settings.bucket,
        key: `bench/${randomUUID()}`,
        body: pdfStream(SIZE),
        contentType: 'application/pdf',
      });
    /** MiB/s of `count` uploads made `at` a time. */
    const throughput = async (upload, count, at) => {
      const started = process.hrtime.bigint();
      for (let done = 0; done < count; done += at)
        await Promise.all(Array.from({ length: Math.min(at, count - done) }, upload));
      return (count * SIZE) / MiB / (Number(process.hrtime.bigint() - started) / 1e9);
    };

    // Warm-up: one each way (module loading and connection set-up are not upload costs), then let the edge settle.
    await direct();
    await viaEdge();
    await new Promise((r) => setTimeout(r, 2000));
    const idle = rssMiB(edge.pid);

    const rows = [];
    const seq = { direct: await throughput(direct, UPLOADS, 1), edge: await throughput(viaEdge, UPLOADS, 1) };
    rows.push([`c=1 (${UPLOADS} uploads)`, seq.direct.toFixed(1), seq.edge.toFixed(1), ratio(seq.edge / seq.direct)]);
    const parDirect = await throughput(direct, PARALLEL, PARALLEL);
    const rss = rssSampler(edge.pid, 20);
    const parEdge = await throughput(viaEdge, PARALLEL, PARALLEL);
    const peak = rss.stop();
    rows.push([
      `c=${PARALLEL} (${PARALLEL} uploads)`,
      parDirect.toFixed(1),
      parEdge.toFixed(1),
      ratio(parEdge / parDirect),
    ]);

    console.log(`bench/files  node ${process.version}, ${SIZE / MiB} MiB bodies streamed, S3 = s3rver (local disk)`);
    printTable(['case', 'direct PutObject MiB/s', 'edge POST /v1/files MiB/s', 'edge vs direct'], rows);
    const above = peak - idle;
    console.log(
      `edge RSS: idle ${idle.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB during ${PARALLEL} concurrent ` +
        `${SIZE / MiB} MiB uploads: +${above.toFixed(0)} MiB (target < ${TARGET_RSS_MIB} MiB): ` +
        `${verdict(above < TARGET_RSS_MIB)}`,
    );
  } finally {
    await edge.stop();
    s3.destroy();
  }
});
