/**
 * Where the client keeps its login: `{ apiUrl, key, workspace? }` in `config.json` of the user's config directory.
 * The key is a secret, so the file is the user's alone (0600 in a 0700 directory) from the moment it exists: it is
 * written under a temporary name created with that mode and renamed over the old file, never widened then narrowed.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join, posix, win32 } from 'node:path';
import { z } from 'zod';
import { CliError, messageOf } from './errors.js';

export const CONFIG_FILE_NAME = 'config.json';
const FILE_MODE = 0o600;
const DIRECTORY_MODE = 0o700;

export const StoredLoginSchema = z.object({
  apiUrl: z.url({ protocol: /^https?$/ }),
  key: z.string().min(1),
  workspace: z.string().min(1).optional(),
});
export type StoredLogin = z.infer<typeof StoredLoginSchema>;

export interface ConfigPlace {
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  home: string;
}

const here = (): ConfigPlace => ({ env: process.env, platform: process.platform, home: homedir() });

/**
 * TICKETING_CONFIG_DIR when set; else $XDG_CONFIG_HOME/ticketing (the XDG spec ignores a relative value); else
 * %APPDATA%\ticketing on Windows and ~/.config/ticketing elsewhere (macOS included, as most developer CLIs do).
 */
export function configDirectory(place: Partial<ConfigPlace> = {}): string {
  const { env, platform, home } = { ...here(), ...place };
  if (env.TICKETING_CONFIG_DIR) return env.TICKETING_CONFIG_DIR;
  if (env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME)) return join(env.XDG_CONFIG_HOME, 'ticketing');
  if (platform === 'win32') return win32.join(env.APPDATA ?? win32.join(home, 'AppData', 'Roaming'), 'ticketing');
  return posix.join(home, '.config', 'ticketing');
}

export const configFile = (directory: string): string => join(directory, CONFIG_FILE_NAME);

// Duck-typed: errors from node:fs need not be instances of this realm's Error (jest's VM modules, for one).
const isMissing = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT';

/** The stored login, or null when nobody logged in. */
export async function loadLogin(directory: string): Promise<StoredLogin | null> {
  const path = configFile(directory);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (isMissing(error)) return null;
    throw new CliError(`Cannot read ${path}: ${messageOf(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const login = StoredLoginSchema.safeParse(parsed);
  if (!login.success) throw new CliError(`${path} is not a login this client wrote: run \`ticketing login\` again`);
  return login.data;
}

export async function saveLogin(directory: string, login: StoredLogin): Promise<string> {
  await mkdir(directory, { recursive: true, mode: DIRECTORY_MODE });
  // mkdir leaves an existing directory as it was and the umask may have narrowed a new one differently.
  await chmod(directory, DIRECTORY_MODE);
  const path = configFile(directory);
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temporary, 'wx', FILE_MODE);
  try {
    await handle.writeFile(`${JSON.stringify(StoredLoginSchema.parse(login), null, 2)}\n`, 'utf8');
    await handle.chmod(FILE_MODE);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(temporary, { force: true });
    throw error;
  }
  await handle.close();
  await rename(temporary, path);
  return path;
}

/** Forgets the login; true when there was one. */
export async function deleteLogin(directory: string): Promise<boolean> {
  const path = configFile(directory);
  try {
    await rm(path);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}
