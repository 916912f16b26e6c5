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
  callbackUrl: null,
  callbackState: 'none',
  createdAt: new Date('2026-01-01T00:00:00Z'),
  startedAt: null,
  completedAt: null,
};

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
