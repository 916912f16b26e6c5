import { createShutdown } from './shutdown';

const quiet = { info: jest.fn(), error: jest.fn() };

describe('createShutdown', () => {
  it('runs the phases in order, once, each bounded by its timeout', async () => {
    const order: string[] = [];
    const shutdown = createShutdown(
      [
        { name: 'http', timeoutMs: 1000, run: () => void order.push('http') },
        { name: 'stuck', timeoutMs: 50, run: () => new Promise<void>(() => order.push('stuck')) },
        {
          name: 'failing',
          timeoutMs: 1000,
          run: () => {
            order.push('failing');
            throw new Error('boom');
          },
        },
        { name: 'clients', timeoutMs: 1000, run: async () => void order.push('clients') },
      ],
      quiet,
    );
    const started = Date.now();
    await Promise.all([shutdown.run('SIGTERM'), shutdown.run('SIGINT')]);
    expect(order).toEqual(['http', 'stuck', 'failing', 'clients']);
    expect(Date.now() - started).toBeLessThan(900);
    expect(quiet.error).toHaveBeenCalledWith({ phase: 'stuck', timeoutMs: 50 }, 'shutdown phase timed out');
    expect(quiet.error).toHaveBeenCalledWith(expect.objectContaining({ phase: 'failing' }), 'shutdown phase failed');
  });
});
