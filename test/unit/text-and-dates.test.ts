import { dateIfSent, dateOrNull, patchedDate } from '../../api/http/dates.js';
import { escapeLike, likeContains } from '../../api/http/text.js';
import { SLUG_PATTERN, slugify } from '../../domain/slug.js';

describe('slugify', () => {
  const options = { maxLength: 100, fallback: 'event' };

  test('drops accents and keeps the words of a Spanish name', () => {
    expect(slugify('Rock al Parque: Edición Ñandú', options)).toBe('rock-al-parque-edicion-nandu');
  });

  test('a name with nothing usable falls back', () => {
    expect(slugify('🎸 ¡¿?!', options)).toBe('event');
    expect(slugify('', { maxLength: 60, fallback: 'workspace' })).toBe('workspace');
  });

  test('the cut never leaves a trailing dash, so the result is a valid slug', () => {
    const slug = slugify('abcd efgh', { maxLength: 5, fallback: 'x' });
    expect(slug).toBe('abcd');
    expect(slug).toMatch(SLUG_PATTERN);
  });

  test('runs of separators become one dash, none at the ends', () => {
    expect(slugify('  --Festival   Estéreo  Picnic 2026!!  ', options)).toBe('festival-estereo-picnic-2026');
  });
});

describe('LIKE escaping', () => {
  test('%, _ and backslash are escaped, other text is kept', () => {
    expect(escapeLike('100% rock_and\\roll')).toBe('100\\% rock\\_and\\\\roll');
    expect(escapeLike('Teatro Colón')).toBe('Teatro Colón');
  });

  test('a contains pattern wraps the escaped text in wildcards', () => {
    expect(likeContains('50%_off')).toBe('%50\\%\\_off%');
  });
});

describe('date fields', () => {
  const iso = '2026-03-01T20:00:00.000Z';

  test('dateOrNull: absent, null and empty all mean no date', () => {
    expect(dateOrNull(undefined)).toBeNull();
    expect(dateOrNull(null)).toBeNull();
    expect(dateOrNull('')).toBeNull();
    expect(dateOrNull(iso)?.toISOString()).toBe(iso);
  });

  test('dateIfSent: absent stays undefined so a PATCH keeps the stored value; null clears', () => {
    expect(dateIfSent(undefined)).toBeUndefined();
    expect(dateIfSent(null)).toBeNull();
    expect(dateIfSent(iso)?.toISOString()).toBe(iso);
  });

  test('patchedDate: the sent value wins, null clears, absent keeps the stored one', () => {
    const stored = new Date('2025-01-01T00:00:00.000Z');
    expect(patchedDate(undefined, stored)).toBe(stored);
    expect(patchedDate(undefined, undefined)).toBeNull();
    expect(patchedDate(null, stored)).toBeNull();
    expect(patchedDate(iso, stored)?.toISOString()).toBe(iso);
  });
});
