/** `%`, `_` and `\` typed by a user are literal characters in a search, not wildcards. */
export const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (char) => `\\${char}`);

/** An ILIKE pattern matching values that contain `text` anywhere, with its wildcards escaped. */
export const likeContains = (text: string): string => `%${escapeLike(text)}%`;
