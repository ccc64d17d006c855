import type { FastifyInstance } from 'fastify';

/**
 * Parses `application/x-www-form-urlencoded` bodies (HTML forms, OAuth 2.0 clients) into an object of strings, for
 * the routes of the scope it is called in. A field sent twice becomes an array, which a string schema refuses: OAuth
 * forbids repeated parameters (RFC 6749 section 3.1) and no form of ours repeats one. The object has no prototype,
 * so a field named `__proto__` is just a field.
 */
export function acceptFormBodies(app: FastifyInstance): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    const fields: Record<string, string | string[]> = Object.create(null);
    for (const [name, value] of new URLSearchParams(String(body))) {
      const earlier = fields[name];
      fields[name] = earlier === undefined ? value : [...(Array.isArray(earlier) ? earlier : [earlier]), value];
    }
    done(null, fields);
  });
}
