import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../../domain/errors.js';
import type { FieldProblem } from './errors.js';

const TAB = 0x09;
const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * Characters that change how the text around them reads without showing themselves: DEL and the C1 controls
 * (U+007F–U+009F), and the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), with
 * which a name on a ticket, an email or a CSV cell can display reversed ("Trojan source"). None belongs anywhere.
 */
const isInvisibleControl = (code: number): boolean =>
  (code >= 0x7f && code <= 0x9f) || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);

/**
 * Zero-width characters (U+200B–U+200D, U+2060, U+FEFF): two names that look the same compare different, so a
 * slug, a name or an email can impersonate another. Prose may need them (a zero-width joiner in emoji or in
 * Persian and Indic scripts), so they are refused only in single-line fields.
 */
const isZeroWidth = (code: number): boolean => (code >= 0x200b && code <= 0x200d) || code === 0x2060 || code === 0xfeff;

/**
 * A C0 control (U+0000–U+001F), NUL included: PostgreSQL refuses NUL in text, and none belongs in a name or an id;
 * or an invisible control (above). Free text may keep tab, line breaks and zero-width characters.
 */
function hasControlCharacter(value: string, freeText: boolean): boolean {
  for (let index = 0; index < value.length; index += 1) {
    const code = value.charCodeAt(index);
    if (code < 0x20) {
      if (freeText && (code === TAB || code === LINE_FEED || code === CARRIAGE_RETURN)) continue;
      return true;
    }
    if (code < 0x7f) continue;
    if (isInvisibleControl(code) || (!freeText && isZeroWidth(code))) return true;
  }
  return false;
}

/**
 * Body fields that hold prose (descriptions, addresses, reasons, notes), where a pasted paragraph brings tabs and
 * line breaks. Everything else (names, emails, phones, ids, codes, tokens, URLs, query strings, path params) is
 * single-line by nature and gets the strict rule.
 */
const FREE_TEXT_FIELDS: ReadonlySet<string> = new Set([
  'description',
  'address',
  'reason',
  'note',
  'notes',
  'message',
  'comment',
  'instructions',
  'terms',
]);

const MAX_PROBLEMS = 20;
const MAX_DEPTH = 32;

type Location = 'body' | 'querystring' | 'params';

function collectProblems(
  value: unknown,
  path: string[],
  freeText: boolean,
  depth: number,
  problems: FieldProblem[],
): void {
  if (problems.length >= MAX_PROBLEMS || depth > MAX_DEPTH) return;
  if (typeof value === 'string') {
    if (hasControlCharacter(value, freeText)) {
      problems.push({
        field: path.join('.'),
        message: freeText
          ? 'must not contain control characters (C0 other than tab and line breaks, DEL, C1, bidi overrides)'
          : 'must not contain control, bidi override or zero-width characters',
      });
    }
    return;
  }
  if (Array.isArray(value)) {
    // Items of a free-text array (notes: [...]) are free text too; indices do not name a field.
    value.forEach((item, index) => {
      collectProblems(item, [...path, String(index)], freeText, depth + 1, problems);
    });
    return;
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      const itemPath = [...path, key];
      if (hasControlCharacter(key, false)) {
        problems.push({ field: itemPath.join('.'), message: 'field names must not contain control characters' });
      }
      collectProblems(item, itemPath, path[0] === 'body' && FREE_TEXT_FIELDS.has(key), depth + 1, problems);
    }
  }
}

/**
 * One rule for every route: a string anywhere in a request body, query string or path parameter that carries a C0
 * control character (or DEL, a C1 control, a bidi override, or in a single-line field a zero-width character) is
 * refused with 422 before validation. A NUL byte would otherwise reach PostgreSQL, which refuses
 * it on every retry of the step that writes it (a buyer waited a minute for a 503); other controls corrupt what
 * organizers and buyers read back (names on tickets, CSV exports, emails).
 */
export const controlCharactersPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('preValidation', async (request) => {
      const problems: FieldProblem[] = [];
      const sources: Array<[Location, unknown]> = [
        ['params', request.params],
        ['querystring', request.query],
      ];
      // Gateway notifications keep their raw bytes for signature checks and are re-read from the gateway, never
      // stored as sent: refusing one would only make the gateway retry a notification it cannot change.
      if (request.rawBody === undefined) sources.push(['body', request.body]);
      for (const [location, value] of sources) collectProblems(value, [location], false, 0, problems);
      const first = problems[0];
      if (first) {
        throw new AppError('VALIDATION_FAILED', `${first.field}: ${first.message}`, { details: { fields: problems } });
      }
    });
  },
  { name: 'control-characters' },
);
