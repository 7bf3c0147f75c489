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
