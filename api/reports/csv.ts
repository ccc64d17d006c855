/**
 * CSV for spreadsheets (RFC 4180): comma separated, CRLF line ends, UTF-8 with a byte-order mark so Excel reads
 * "Gómez" as written. A cell a spreadsheet would run as a formula (leading `=`, `+`, `-`, `@`, tab or carriage
 * return; OWASP "CSV injection") is prefixed with a single quote, which spreadsheets show as text. Numbers we write
 * ourselves (amounts, counts) are not prefixed, so a negative net stays a number.
 *
 * The separator is ours, but the reader's may differ: a spreadsheet in a locale that splits on `;` (or a tool that
 * splits on tab or `|`) reads `Ana;=1+1;x` as three cells, the second a formula. So a cell holding any of those
 * separators is quoted (one cell under every separator), and each piece after such a separator that starts like a
 * formula gets the same quote prefix, for readers that split without honouring quotes.
 */
export const CSV_BOM = '\uFEFF';
const FORMULA_START = /^[=+\-@\t\r]/;
/** A separator some reader may split on, followed by what a spreadsheet would run as a formula. */
const FORMULA_AFTER_SEPARATOR = /([,;\t|])(?=[=+\-@\r])/g;
const NEEDS_QUOTES = /[",;\t|\r\n]/;

export type CsvValue = string | number | boolean | null | undefined | Date;

export function csvCell(value: CsvValue): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`a CSV cell cannot hold ${value}`);
    return String(value);
  }
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  let text = value instanceof Date ? value.toISOString() : value;
  text = text.replace(FORMULA_AFTER_SEPARATOR, "$1'");
  if (FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export const csvLine = (values: readonly CsvValue[]): string => `${values.map(csvCell).join(',')}\r\n`;
