import { createMetrics, renderMetrics } from './metrics';

describe('metrics', () => {
  it('renders the request histogram with the service label and the process metrics', async () => {
    const metrics = createMetrics('edge');
    metrics.httpRequests.observe({ method: 'GET', route: '/api/v1/tasks/:id', status: '200' }, 0.042);
    const { contentType, body } = await renderMetrics(metrics);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(body).toMatch(/^http_request_duration_seconds_bucket\{[^}]*route="\/api\/v1\/tasks\/:id"[^}]*\} 1$/m);
    expect(body).toMatch(/^http_request_duration_seconds_count\{[^}]*service="edge"[^}]*\} 1$/m);
    expect(body).toMatch(/^process_cpu_user_seconds_total\{service="edge"\} /m);
  });

  it('gives each instance its own registry', async () => {
    const a = createMetrics('a');
    const b = createMetrics('b');
    a.httpRequests.observe({ method: 'POST', route: '/x', status: '202' }, 0.1);
    expect((await renderMetrics(b)).body).not.toContain('route="/x"');
  });
});
