import { landingPath } from '../src/pages/sign-in/landing';

const session = { workspaces: [{ id: 'ws_A', name: 'A', tier: 'payg' as const, role: 'owner' as const }] };

it('goes back to the dashboard page that sent the person to sign in', () => {
  expect(landingPath(session, '/dashboard/w/ws_B/keys')).toBe('/dashboard/w/ws_B/keys');
  expect(landingPath(session, '/dashboard/invite/tok123')).toBe('/dashboard/invite/tok123');
});

it('never follows next= off the app, nor back to sign-in', () => {
  for (const next of [
    'https://evil.example/',
    '//evil.example/dashboard/',
    '/dashboard//evil.example',
    '/dashboard/\\evil.example',
    '/api/v1/dashboard/session',
    '/dashboard/sign-in?next=x',
    'javascript:alert(1)',
    '',
  ]) {
    expect(landingPath(session, next)).toBe('/dashboard/w/ws_A/outputs');
  }
});

it('lands on the first workspace, or the home page for someone in none', () => {
  expect(landingPath(session, null)).toBe('/dashboard/w/ws_A/outputs');
  expect(landingPath({ workspaces: [] }, null)).toBe('/dashboard/');
});
