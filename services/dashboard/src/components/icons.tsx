// A handful of line icons drawn here (no icon font, no CDN); decorative, so hidden from assistive technology.
const paths: Record<string, string> = {
  outputs: 'M4 5h12v10H4zM4 12l3.5-3.5L11 12l2-2 3 3M12.5 7.5h.01',
  projects: 'M3 6h5l1.5 2H17v8H3zM3 6V4h5',
  tasks: 'M6 5h10M6 10h10M6 15h10M3 5h.01M3 10h.01M3 15h.01',
  keys: 'M12.5 3.5a4 4 0 1 1-2.9 6.8L4 16H2.5v-2H4.5v-2h2l1.9-1.9A4 4 0 0 1 12.5 3.5zM13.5 6.5h.01',
  members: 'M7 9a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM2 17c0-3 2.2-5 5-5s5 2 5 5M13 9a2.5 2.5 0 1 0 0-5M15 12c2 .5 3 2.2 3 5',
  usage: 'M3 17h14M5 14V9M9 14V5M13 14v-3M17 14V7',
  account: 'M10 10a3.5 3.5 0 1 0 0-7 3.5 3.5 0 0 0 0 7zM3.5 17.5c.8-3 3.3-4.5 6.5-4.5s5.7 1.5 6.5 4.5',
  signout: 'M8 4H4v12h4M12 6l4 4-4 4M16 10H8',
};

export function Icon({ name }: { name: keyof typeof paths | string }) {
  return (
    <svg className="icon" viewBox="0 0 20 20" width="18" height="18" aria-hidden="true" focusable="false">
      <path
        d={paths[name] ?? ''}
        fill="none"
        stroke="currentColor"
        strokeWidth="1.6"
        strokeLinecap="round"
        strokeLinejoin="round"
      />
    </svg>
  );
}
