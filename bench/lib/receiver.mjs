// bench/tasks' callback receiver, a process of its own as a customer's receiver is (bench code, never production): a
// local HTTPS server (CERT_FILE, KEY_FILE) that checks each callback's signature against the workspaces' secrets,
// answers 204 at once and stamps when each arrived. In the bench's own process its handler waited behind s3rver's and
// the callers' turns, which the callback's receipt time then counted as the gateway's lag.
//
// Over the IPC channel: the parent sends { secret } (answered { secretAdded }) and { lastBody: true } (answered
// { lastBody: <base64 of the last callback that passed the check> }); this process sends { listening: port } once,
// then { arrivals: [[taskId, unix ms, verified], ...], handshakes } batched once per turn (each stamped as it came).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { gensvc } from './gensvc.mjs';

const { verifyCallback } = gensvc('webhooks');

const secrets = [];
/** The last callback that passed the check: the floor dispatcher sends these bytes. */
let last;
let handshakes = 0;
let batch = [];

const flush = () => {
  process.send({ arrivals: batch, handshakes });
  batch = [];
};

const server = createServer(
  { cert: readFileSync(process.env.CERT_FILE), key: readFileSync(process.env.KEY_FILE) },
  (req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      const at = Date.now();
      const body = Buffer.concat(chunks);
      let verified = true;
      try {
        verifyCallback(body, req.headers, secrets);
        last = body;
      } catch {
        verified = false;
      }
      res.statusCode = 204;
      res.end();
      if (batch.length === 0) setImmediate(flush);
      batch.push([req.headers['svc-task-id'], at, verified]);
    });
  },
);
server.keepAliveTimeout = 65_000;
server.on('secureConnection', () => handshakes++);

process.on('message', (m) => {
  if (m.secret) {
    secrets.push(m.secret);
    process.send({ secretAdded: m.secret });
  } else if (m.lastBody) process.send({ lastBody: last ? last.toString('base64') : null });
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => server.close(() => process.exit(0)) && server.closeAllConnections());
server.listen(0, '127.0.0.1', () => process.send({ listening: server.address().port }));
