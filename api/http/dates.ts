/** A date field that may be cleared: absent, null and empty all mean "no date". */
export const dateOrNull = (value: string | null | undefined): Date | null => (value ? new Date(value) : null);

/** A PATCH date field: undefined when the client did not send it (keep the stored value), null when it cleared it. */
export const dateIfSent = (value: string | null | undefined): Date | null | undefined =>
  value === undefined ? undefined : dateOrNull(value);

/** The value a nullable date will have after a PATCH: the one sent (null clears it), else the stored one. */
export const patchedDate = (sent: string | null | undefined, stored: Date | null | undefined): Date | null =>
  sent === undefined ? (stored ?? null) : dateOrNull(sent);
