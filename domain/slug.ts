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

/**
 * Words no workspace may take as a slug of its own: addresses of the service's pages and API, and names that would
 * pass for the service itself on a storefront link. Generated slugs that land on one get a suffix instead.
 */
export const RESERVED_SLUGS: ReadonlySet<string> = new Set([
  'admin',
  'administrator',
  'api',
  'app',
  'auth',
  'billing',
  'checkout',
  'dashboard',
  'device',
  'docs',
  'events',
  'help',
  'invitations',
  'login',
  'logout',
  'me',
  'new',
  'null',
  'official',
  'orders',
  'pay',
  'payment',
  'public',
  'security',
  'settings',
  'signin',
  'signup',
  'staff',
  'static',
  'status',
  'support',
  'ticketing',
  'tickets',
  'undefined',
  'verify',
  'www',
]);

export const isReservedSlug = (slug: string): boolean => RESERVED_SLUGS.has(slug);
