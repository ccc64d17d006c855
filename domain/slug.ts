/** Lowercase letters and digits in runs joined by single dashes: safe in a URL path without escaping. */
export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/**
 * A slug made from a display name. Accents are dropped rather than the letters ("Edición Ñandú" → "edicion-nandu")
 * so Spanish names keep their words; a name with nothing usable left (emoji only) falls back to `fallback`.
 */
export function slugify(name: string, options: { maxLength: number; fallback: string }): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, options.maxLength)
    // The cut can land right after a dash; a trailing dash would not match SLUG_PATTERN.
    .replace(/-+$/g, '');
  return slug || options.fallback;
}
