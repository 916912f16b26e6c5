// Signed content links (DESIGN.md §5): a JWS, HS256 with the server's secret, checked against an algorithms
// allow-list, carrying the file, its workspace and the scope "download".
import { createHmac } from 'node:crypto';
import { jwtVerify, errors as joseErrors } from 'jose';

const ALGORITHMS = ['HS256'];
export const FILE_TOKEN_TTL_SECONDS = 3600;

export interface FileTokenClaims {
  fileId: string;
  workspaceId: string;
}

const keyOf = (secret: string) => new TextEncoder().encode(secret);

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256' })).toString('base64url');

/**
 * The JWS compact serialisation of RFC 7515 (HS256), as jose's SignJWT makes it, signed synchronously with
 * node:crypto: one is signed per callback delivery and per task read with a download link, and WebCrypto's
 * async HMAC cost more than the rest of the link. jose verifies it (verifyFileToken).
 */
export async function signFileToken(secret: string, claims: FileTokenClaims, ttlSeconds = FILE_TOKEN_TTL_SECONDS) {
  const iat = Math.floor(Date.now() / 1000);
  const exp = iat + ttlSeconds;
  const payload = Buffer.from(
    JSON.stringify({ ws: claims.workspaceId, scope: 'download', sub: claims.fileId, iat, exp }),
  ).toString('base64url');
  const signature = createHmac('sha256', secret).update(`${HEADER}.${payload}`).digest('base64url');
  return { token: `${HEADER}.${payload}.${signature}`, expiresAt: new Date(exp * 1000) };
}

/** The claims, or null for a token that is tampered, expired, of another algorithm or another scope. */
export async function verifyFileToken(secret: string, token: string): Promise<FileTokenClaims | null> {
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), { algorithms: ALGORITHMS });
    if (payload.scope !== 'download' || typeof payload.sub !== 'string' || typeof payload.ws !== 'string') return null;
    return { fileId: payload.sub, workspaceId: payload.ws };
  } catch (e) {
    if (e instanceof joseErrors.JOSEError) return null;
    throw e;
  }
}

/** The signed content link of spec §2.4: `{base_url}/api/v1/files/<id>/content?token=<jws>`, valid one hour. */
export async function fileContentLink(
  publicBaseUrl: string,
  secret: string,
  claims: FileTokenClaims,
): Promise<{ url: string; expiresAt: Date }> {
  const { path, expiresAt } = await fileContentPath(secret, claims);
  return { url: `${publicBaseUrl}${path}`, expiresAt };
}

/**
 * fileContentLink without its origin: for pages the edge serves itself (the dashboard), which resolve it against the
 * address they were opened by, whatever host name or proxy that was, and so stay same-origin under their CSP.
 */
export async function fileContentPath(
  secret: string,
  claims: FileTokenClaims,
): Promise<{ path: string; expiresAt: Date }> {
  const { token, expiresAt } = await signFileToken(secret, claims);
  return { path: `/api/v1/files/${encodeURIComponent(claims.fileId)}/content?token=${token}`, expiresAt };
}
