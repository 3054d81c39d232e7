/** What stands in for a password in logs and error messages. */
export const REDACTED = '***';

/** `scheme://` then the rest. */
const WITH_SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)(.*)$/s;

/**
 * The URL with its password replaced by `***` (the user name stays): safe to log or put in an
 * error message. A socket path, or a URL without a password, comes back unchanged.
 *
 * Deliberately coarse: everything between `//` and the last `@` is taken as user info, so a
 * password with an unescaped `/`, `?`, `#` or `@` in it is still hidden, even in a URL that
 * does not parse.
 */
export function redactRedisUrl(url: string): string {
  const match = WITH_SCHEME.exec(url);
  if (!match) return url;
  const [, scheme = '', rest = ''] = match;
  const at = rest.lastIndexOf('@');
  if (at === -1) return url;
  const colon = rest.indexOf(':');
  if (colon === -1 || colon > at) return url;
  return `${scheme}${rest.slice(0, colon)}:${REDACTED}${rest.slice(at)}`;
}
