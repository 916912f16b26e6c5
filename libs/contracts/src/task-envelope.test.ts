import { taskEnvelope, taskEnvelopeSchema, type TaskEnvelopeSource } from './task-envelope';

const base: TaskEnvelopeSource = {
  id: 'tsk_0000000000000000000001',
  status: 'queued',
  model: 'sim/image-1',
  operation: 'text-to-image',
  output: null,
  cost: null,
  reserved: 40_000n,
  errorCode: null,
  errorMessage: null,
  channelId: null,
  upstreamId: null,
  providerJobs: [],
  callbackUrl: null,
  callbackState: 'none',
  createdAt: new Date('2026-01-01T00:00:00Z'),
  startedAt: null,
  completedAt: null,
};

describe('taskEnvelope attempts', () => {
  const ended = {
    channel: 'ch_a',
    upstream_id: 'pred_1',
    status: 'failed',
    error_code: 'upstream_error',
    error_message: 'CUDA out of memory',
    started_at: '2026-01-01T00:00:01.000Z',
    ended_at: '2026-01-01T00:00:02.000Z',
  };

  it('lists none before a submission, then the ended jobs and the current one as the row says it stands', () => {
    expect(taskEnvelope(base, { currency: 'USD' }).attempts).toEqual([]);
    const running = {
      ...base,
      status: 'running',
      channelId: 'ch_b',
      upstreamId: 'req_2',
      providerJobs: [ended],
      startedAt: new Date('2026-01-01T00:00:03Z'),
    };
    const envelope = taskEnvelope(running, { currency: 'USD' });
    expect(envelope.started_at).toBe('2026-01-01T00:00:01.000Z');
    expect(envelope.attempts).toEqual([
      {
        channel: 'ch_a',
        upstream_id: 'pred_1',
        status: 'failed',
        error_code: 'upstream_error',
        started_at: '2026-01-01T00:00:01.000Z',
        ended_at: '2026-01-01T00:00:02.000Z',
      },
      {
        channel: 'ch_b',
        upstream_id: 'req_2',
        status: 'running',
        error_code: null,
        started_at: '2026-01-01T00:00:03.000Z',
        ended_at: null,
      },
    ]);
    const failed = taskEnvelope(
      { ...running, status: 'failed', errorCode: 'upstream_error', completedAt: new Date('2026-01-01T00:00:09Z') },
      { currency: 'USD' },
    );
    expect(failed.attempts[1]).toMatchObject({ status: 'failed', error_code: 'upstream_error' });
    expect(failed.attempts[1]!.ended_at).toBe('2026-01-01T00:00:09.000Z');
    expect(taskEnvelopeSchema.strict().parse(failed)).toEqual(failed);
  });
});

describe('taskEnvelopeSchema (the OpenAPI document of the envelope)', () => {
  it('holds for what taskEnvelope makes: queued, archived with a download link, failed, and a callback', () => {
    const archived = {
      ...base,
      status: 'completed',
      cost: 40_000n,
      startedAt: new Date('2026-01-01T00:00:01Z'),
      completedAt: new Date('2026-01-01T00:00:05Z'),
      callbackUrl: 'https://hooks.example/cb',
      callbackState: 'delivered',
      output: {
        outputs: [
          {
            kind: 'video',
            url: 'https://provider.example/o.mp4',
            svc_url: 'https://files.example/o.mp4',
            svc_file_id: 'file_x',
            archive_status: 'archived',
            duration: 5,
            width: 1280,
            height: 720,
            content_type: 'video/mp4',
          },
        ],
      },
    };
    const envelopes = [
      taskEnvelope(base, { currency: 'USD' }),
      taskEnvelope(archived, {
        currency: 'USD',
        download: { url: 'https://edge.example/c', expiresAt: new Date() },
        deliveredAt: new Date(),
      }),
      taskEnvelope(
        { ...base, status: 'failed', errorCode: 'content_rejected', errorMessage: 'flagged' },
        { currency: 'EUR' },
      ),
    ];
    for (const e of envelopes) expect(taskEnvelopeSchema.strict().parse(e)).toEqual(e);
    expect(envelopes[1]!.output).toMatchObject({
      file_id: 'file_x',
      provider_url: 'https://provider.example/o.mp4',
      duration: 5,
    });
  });

  it('refuses an envelope that is not one', () => {
    expect(taskEnvelopeSchema.safeParse({ ...taskEnvelope(base, { currency: 'USD' }), status: 'done' }).success).toBe(
      false,
    );
  });
});
