// The contract every file under protocols/ fulfils. The server reads the body, asks the protocol for the model
// (so a fault can be chosen by model) and for any request error, applies the fault, and only then asks for the answer.
import type { IncomingMessage } from 'node:http';
import type { FaultOperation, FaultRule } from './faults';
import type { Reply } from './reply';

export type ProtocolName =
  | 'evaluate'
  | 'openai-chat'
  | 'anthropic-messages'
  | 'gemini'
  | 'openai-images'
  | 'openai-responses'
  | 'files'
  | 'replicate'
  | 'fal'
  | 'outputs';

export interface SimRequest {
  req: IncomingMessage;
  method: string;
  /** Path with the `/ch/<name>` prefix removed, without the query. */
  path: string;
  query: URLSearchParams;
  /** '' for requests at the root. */
  channel: string;
  /** '' or `/ch/<name>`: links the sim hands out keep the channel. */
  prefix: string;
  body: Buffer;
  /** Base URL of the sim as the client addressed it, e.g. http://127.0.0.1:8090. */
  origin: string;
  /** Base URL that output files are served from: `origin`, or the HTTPS outputs listener on the same host name. */
  outputsOrigin: string;
}

export interface Parsed<T> {
  model?: string;
  /** What a task-protocol request does, so a fault can target it (e.g. only polls). */
  operation?: FaultOperation;
  /** The request is wrong (auth, validation): answered with this unless a fault applies first. */
  error?: Reply;
  value?: T;
}

export interface Protocol<T = unknown> {
  name: ProtocolName;
  matches(method: string, path: string): boolean;
  parse(request: SimRequest): Parsed<T> | Promise<Parsed<T>>;
  answer(value: T, request: SimRequest): Reply | Promise<Reply>;
  /** The protocol's own error body for a status (faults without a body use it). */
  errorReply(status: number, message?: string): Reply;
  /** Valid JSON with the wrong shape, for `malformed: "shape"`; applied to a JSON body or to each stream item. */
  malformShape(body: unknown, fault: FaultRule): unknown;
}

/** The JSON body as an object, or null when it is not valid JSON or not an object. */
export function jsonObject(body: Buffer): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** The token of `Authorization: Bearer <token>`, or '' when absent or malformed. */
export function bearer(req: IncomingMessage): string {
  const header = req.headers.authorization;
  if (!header || header.length < 8 || header.slice(0, 7).toLowerCase() !== 'bearer ') return '';
  return header.slice(7).trim();
}

export const isPositiveInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1;
