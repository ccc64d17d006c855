/**
 * Text that came from the service (event names, buyer names, error messages) is printed on someone's terminal.
 * Buyers type their own names, so a name carrying escape sequences could rewrite the screen or the window title;
 * every control character is shown as U+FFFD instead.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

export const terminalSafe = (text: string): string => text.replace(CONTROL, '\uFFFD');
