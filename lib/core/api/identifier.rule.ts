// Type only: erased at run time, so loading this file loads no class-validator.
import type { ValueRule } from './value.rule.js';

/** Longest identifier accepted in a request or an answer (payment, tracking, client, merchant ids). */
export const MAX_ID_LENGTH = 256;

/**
 * An identifier: a non-blank string of at most 256 characters, without control characters
 * (a CR/LF would split a log line or a header) and without lone surrogates (they cannot be
 * percent-encoded into a URL). The sandbox accepts a `client_id` by this same rule.
 */
export const identifier: ValueRule = (value) => {
  if (typeof value !== 'string' || !/\S/.test(value)) return 'must be a non-empty string';
  if (value.length > MAX_ID_LENGTH) return `must be at most ${MAX_ID_LENGTH} characters`;
  if (/\p{Cc}/u.test(value)) return 'must not contain control characters (line breaks, tabs, NUL)';
  if (/\p{Cs}/u.test(value)) return 'must be well-formed Unicode text (no lone surrogates)';
  return undefined;
};

/**
 * A payment id, which goes into the path of the verify request: an {@link identifier} that cannot
 * change which path is requested. Encoding keeps `/`, `?` and `#` inside the segment, but `.` and
 * `..` are dot segments that URL resolution removes (`..` would request the API's root with the
 * merchant's credentials), and a server or proxy in front of it may decode `%2e%2e`, `%2f` or a
 * backslash into one. No id the service assigns looks like that.
 */
export const pathSegmentId: ValueRule = (value) => {
  const problem = identifier(value);
  if (problem) return problem;
  const id = value as string;
  if (/^\.+$/.test(id.trim())) return 'must not be only dots (a dot segment would change the request path)';
  if (/[/\\?#]/.test(id)) return 'must not contain "/", "\\", "?" or "#" (it would change the request path)';
  if (/%[0-9a-f]{2}/i.test(id))
    return 'must not contain percent-escapes such as %2e or %2f (a server may decode them into the path)';
  return undefined;
};
