import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { z } from 'zod';

/** Small helpers shared by the sandbox providers. */

export function escapeHtml(value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** Adds query parameters to a URL that may already have some. */
export function withQuery(url: string, params: Record<string, string>): string {
  const parsed = new URL(url);
  for (const [key, value] of Object.entries(params)) parsed.searchParams.set(key, value);
  return parsed.toString();
}

export function issuesText(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`).join('; ');
}

/** Upper-case alphanumeric id like the gateways' transaction ids. */
export function alphanumericId(length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  let id = '';
  for (let i = 0; i < length; i++) id += alphabet[randomInt(alphabet.length)];
  return id;
}

export const hexId = (bytes: number): string => randomBytes(bytes).toString('hex');

/** ISO 8601 with the Bogotá offset (UTC−5, no DST), as the Colombian gateways print local times. */
export function bogotaTime(date: Date): string {
  return `${new Date(date.getTime() - 5 * 3_600_000).toISOString().slice(0, 23)}-05:00`;
}

/** Constant-time comparison of a presented credential with the expected one. */
export function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** A provider's browser page (bank page, hosted checkout): one plain, self-contained HTML document. */
export function sendPage(reply: FastifyReply, status: number, title: string, body: string) {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>` +
        '<meta name="viewport" content="width=device-width, initial-scale=1">' +
        '<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem}' +
        'label,select,input,button{display:block;margin:.5rem 0}.sandbox{color:#a15c00}.actions{display:flex;gap:1rem}' +
        '#error{color:#b00020}</style></head>' +
        `<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`,
    );
}
