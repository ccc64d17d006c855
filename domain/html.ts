/**
 * Text placed in HTML (server-rendered pages, ticket and membership emails): the five characters that could end a
 * text node or an attribute value become entities, so a buyer's name or an event title cannot inject markup.
 */
export const escapeHtml = (value: string): string =>
  value.replace(
    /[&<>"']/g,
    (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] ?? char,
  );
