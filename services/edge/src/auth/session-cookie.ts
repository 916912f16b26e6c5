// The dashboard's cookies (DESIGN.md §4 Sessions): `gsvc_session` holds the opaque session secret (HttpOnly, so no
// script reads it); `gsvc_csrf` holds the CSRF token the page echoes in X-CSRF-Token (double submit); `gsvc_device`
// marks a browser that has signed in before (login-throttle.ts), sent only to the sign-in route. All SameSite=Lax,
// Secure when the edge's public base URL is https.
import type { Request, Response } from 'express';

export const SESSION_COOKIE = 'gsvc_session';
export const CSRF_COOKIE = 'gsvc_csrf';
export const DEVICE_COOKIE = 'gsvc_device';

/** The value of one cookie of the request (the first, when sent twice); undefined when absent. */
export function cookieOf(req: Request, name: string): string | undefined {
  const header = req.get('cookie');
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export const hasSessionCookie = (req: Request): boolean => cookieOf(req, SESSION_COOKIE) !== undefined;

export interface CookieOptions {
  secure: boolean;
  httpOnly: boolean;
  /** Seconds; 0 deletes the cookie. Absent: a browser-session cookie. */
  maxAge?: number;
  /** The paths the browser sends it to; `/` when absent. */
  path?: string;
}

/** Appends one Set-Cookie header (the response may carry several). Values are base64url: nothing to encode. */
export function setCookie(res: Response, name: string, value: string, o: CookieOptions) {
  const attrs = [`${name}=${value}`, `Path=${o.path ?? '/'}`, 'SameSite=Lax'];
  if (o.httpOnly) attrs.push('HttpOnly');
  if (o.secure) attrs.push('Secure');
  if (o.maxAge !== undefined) attrs.push(`Max-Age=${o.maxAge}`);
  res.append('Set-Cookie', attrs.join('; '));
}
