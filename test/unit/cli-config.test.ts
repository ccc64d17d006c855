/** Where and how the command-line client stores its key: the user's config directory, readable by the user alone. */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configDirectory, configFile, deleteLogin, loadLogin, saveLogin } from '../../cli/config.js';
import { CliError } from '../../cli/errors.js';

const LOGIN = { apiUrl: 'https://tickets.example.com', key: 'tkt_live_secret', workspace: 'ws-1' };
const mode = (path: string) => statSync(path).mode & 0o777;

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'ticketing-cli-config-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('config directory', () => {
  const home = '/home/ana';

  test('TICKETING_CONFIG_DIR wins, then $XDG_CONFIG_HOME/ticketing, then ~/.config/ticketing', () => {
    const xdg = { XDG_CONFIG_HOME: '/xdg' };
    expect(configDirectory({ env: { ...xdg, TICKETING_CONFIG_DIR: '/custom' }, platform: 'linux', home })).toBe(
      '/custom',
    );
    expect(configDirectory({ env: xdg, platform: 'linux', home })).toBe('/xdg/ticketing');
    expect(configDirectory({ env: {}, platform: 'linux', home })).toBe('/home/ana/.config/ticketing');
    expect(configDirectory({ env: {}, platform: 'darwin', home })).toBe('/home/ana/.config/ticketing');
  });

  test('a relative XDG_CONFIG_HOME is ignored, as the XDG base directory spec says', () => {
    expect(configDirectory({ env: { XDG_CONFIG_HOME: 'relative' }, platform: 'linux', home })).toBe(
      '/home/ana/.config/ticketing',
    );
  });

  test('on Windows the login goes under %APPDATA%', () => {
    const env = { APPDATA: 'C:\\Users\\ana\\AppData\\Roaming' };
    expect(configDirectory({ env, platform: 'win32', home: 'C:\\Users\\ana' })).toBe(
      'C:\\Users\\ana\\AppData\\Roaming\\ticketing',
    );
  });
});

describe('stored login', () => {
  test('is written with mode 0600 in a directory with mode 0700, and read back', async () => {
    const directory = join(root, 'nested', 'ticketing');
    const path = await saveLogin(directory, LOGIN);

    expect(path).toBe(configFile(directory));
    expect(mode(path)).toBe(0o600);
    expect(mode(directory)).toBe(0o700);
    expect(await loadLogin(directory)).toEqual(LOGIN);
  });

  test('an existing file or directory readable by others is replaced by one readable by the user alone', async () => {
    const directory = join(root, 'ticketing');
    mkdirSync(directory, { mode: 0o755 });
    chmodSync(directory, 0o755);
    writeFileSync(configFile(directory), '{}', { mode: 0o644 });
    chmodSync(configFile(directory), 0o644);

    await saveLogin(directory, { apiUrl: LOGIN.apiUrl, key: 'tkt_live_newer' });

    expect(mode(configFile(directory))).toBe(0o600);
    expect(mode(directory)).toBe(0o700);
    expect(JSON.parse(readFileSync(configFile(directory), 'utf8'))).toEqual({
      apiUrl: LOGIN.apiUrl,
      key: 'tkt_live_newer',
    });
    expect(readdirSync(directory)).toEqual(['config.json']);
  });

  test('no login yet reads as null; logout deletes it once', async () => {
    expect(await loadLogin(root)).toBeNull();
    await saveLogin(root, LOGIN);
    expect(await deleteLogin(root)).toBe(true);
    expect(await deleteLogin(root)).toBe(false);
    expect(await loadLogin(root)).toBeNull();
  });

  test('a file the client did not write is refused with a way out, not used', async () => {
    writeFileSync(configFile(root), JSON.stringify({ apiUrl: 'ftp://x', key: '' }));
    await expect(loadLogin(root)).rejects.toThrow(CliError);
    await expect(loadLogin(root)).rejects.toThrow(/ticketing login/);
  });
});
