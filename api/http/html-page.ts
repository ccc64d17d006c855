import type { FastifyReply, FastifyRequest } from 'fastify';
import { escapeHtml } from '../../domain/html.js';

/** Small server-rendered pages on the API origin (device verification, sign-up link): no script, no third party. */

/** A hidden form field; every value is escaped. */
export const hiddenField = (name: string, value: string, attributes = ''): string =>
  `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}"${attributes ? ` ${attributes}` : ''}>`;

export function renderPage(input: { title: string; body: string }): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(input.title)}</title>` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<style>body{font-family:system-ui,sans-serif;max-width:34rem;margin:2rem auto;padding:0 1rem;line-height:1.45}' +
    'label{display:block;margin:.75rem 0 .25rem;font-weight:600}input,select,button{font:inherit;padding:.4rem .6rem}' +
    'input[type=text],input[type=email],select{width:100%;box-sizing:border-box}button{margin:1rem .5rem 0 0}' +
    '.error{color:#a40000;font-weight:600}.code{font-family:ui-monospace,monospace;font-size:1.4em;letter-spacing:.15em}' +
    'dt{font-weight:600}dd{margin:0 0 .6rem}</style></head><body><main>' +
    `<h1>${escapeHtml(input.title)}</h1>${input.body}</main></body></html>`
  );
}

/**
 * Sends a page with the headers every one of these pages needs: never cached (they carry CSRF tokens and account
 * data), never framed (an approve button inside someone else's frame is clickjacking), no script at all, forms only
 * to this origin, and no Referer (a user code in the address must not leak to a linked site).
 */
export function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply
    .status(status)
    .headers({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
    })
    .send(html);
}

/**
 * Whether a form was posted from a page on another site (its Origin is not ours). Such a post is refused even when it
 * carries a valid token: a foreign page must not act for this browser's person (login CSRF, accepting on their behalf).
 */
export function postedFromAnotherSite(request: FastifyRequest, publicOrigin: string): boolean {
  const origin = request.headers.origin;
  return origin !== undefined && origin !== new URL(publicOrigin).origin;
}
