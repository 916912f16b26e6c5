// When a job's carried context stands for the attempt's read, as a table: every row is (the job's runs, its age, the
// secrets kept for its workspace) → carried or read.
import type { CarriedAttempt } from '@gensvc/contracts';
import { CARRIED_FRESH_MS } from '@gensvc/queue';
import { carriedContextOf, type KeptSecrets } from './handlers/callback-deliver';

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const VERSION = NOW - 86_400_000;

const carried: CarriedAttempt = {
  id: 'tsk_1',
  workspaceId: 'ws_1',
  status: 'completed',
  model: 'sim/image-1',
  operation: 'text-to-image',
  output: { outputs: [{ kind: 'image', url: 'https://provider.example/0.png', archive_status: 'archived', svc_file_id: 'file_1', svc_url: 'https://files.example/0' }] },
  reserved: '40000',
  cost: '40000',
  errorCode: null,
  errorMessage: null,
  callbackUrl: 'https://hooks.example/cb',
  callbackState: 'pending',
  callbackRoundStart: 1,
  createdAt: NOW - 900,
  startedAt: NOW - 800,
  completedAt: NOW - 20,
  currency: 'USD',
  fileId: 'file_1',
  fileWorkspaceId: 'ws_1',
  fileExpiresAt: NOW + 86_400_000,
  secretsVersion: VERSION,
};

const kept: KeptSecrets = { version: VERSION, signing: ['whsec_current'], until: Infinity };
const firstRun = { attemptsStarted: 1, attemptsMade: 0, stalledCounter: 0, timestamp: NOW - 15 };

type Job = typeof firstRun;
type Row = [what: string, job: Job, kept: KeptSecrets | undefined, carriedUsed: boolean];

const rows: Row[] = [
  ['a fresh first run with the secrets of the version its completion saw', firstRun, kept, true],
  ['… added CARRIED_FRESH_MS ago, still', { ...firstRun, timestamp: NOW - CARRIED_FRESH_MS }, kept, true],
  ['… during the previous secret’s overlap', firstRun, { ...kept, signing: ['whsec_current', 'whsec_previous'], until: NOW + 1 }, true],
  ['a job that waited longer: a redelivery or a rotation may have come since', { ...firstRun, timestamp: NOW - CARRIED_FRESH_MS - 1 }, kept, false],
  ['a second run (the first may have recorded the attempt before it died)', { ...firstRun, attemptsStarted: 2 }, kept, false],
  ['a retry of the dispatcher’s own failure', { ...firstRun, attemptsStarted: 2, attemptsMade: 1 }, kept, false],
  ['a stalled job taken again', { ...firstRun, stalledCounter: 1 }, kept, false],
  ['no secrets kept for the workspace (none read yet)', firstRun, undefined, false],
  ['secrets of another version kept (rotated since the read, or since the completion)', firstRun, { ...kept, version: VERSION + 1 }, false],
  ['secrets kept past their until (the previous secret’s overlap ended)', firstRun, { ...kept, signing: ['whsec_current', 'whsec_previous'], until: NOW }, false],
];

describe('carriedContextOf', () => {
  it.each(rows)('%s', (_what, job, secrets, carriedUsed) => {
    const context = carriedContextOf(carried, job, secrets, new Date(NOW));
    if (!carriedUsed) return expect(context).toBeNull();
    expect(context).toEqual({
      task: {
        id: 'tsk_1',
        workspaceId: 'ws_1',
        status: 'completed',
        model: 'sim/image-1',
        operation: 'text-to-image',
        output: carried.output,
        reserved: 40_000n,
        cost: 40_000n,
        errorCode: null,
        errorMessage: null,
        callbackUrl: 'https://hooks.example/cb',
        callbackState: 'pending',
        callbackRoundStart: 1,
        createdAt: new Date(NOW - 900),
        startedAt: new Date(NOW - 800),
        completedAt: new Date(NOW - 20),
      },
      last: null,
      currency: 'USD',
      signing: secrets!.signing,
      signingUntil: null,
      secretsVersion: VERSION,
      archivedFile: { id: 'file_1', workspaceId: 'ws_1' },
    });
  });
});
