/**
 * @module The building block of the config validation schemas: a valibot check on a whole
 * object whose issue is reported at one of its keys, with a message built from the object
 * (so it can name the tensor or group at fault).
 */
import * as v from "valibot";

export function rule<T extends Record<string, unknown>>(
  key: keyof T & string,
  ok: (t: T) => boolean,
  message: (t: T) => string,
): v.BaseValidation<T, T, v.CheckIssue<T>> {
  const check = v.check<T, (issue: v.CheckIssue<T>) => string>(ok, (issue) => message(issue.input));
  return v.forward(check, [key] as never);
}
