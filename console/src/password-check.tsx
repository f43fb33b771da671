/**
 * The new-password rule in the browser, before a form is sent (docs/accounts.md "Password policy"):
 * the same rule as the API's sign-up and reset, from the same module (lib/shared/password-policy.ts):
 * the length (12 to 256 characters), then zxcvbn-ts with its common-password dictionary. The
 * estimator and its dictionary (about 2 MB) load on the first check, as chunks of their own, so the
 * console's first chunk does not carry them. The API decides; this only tells the reason sooner.
 */
import { type FocusEvent, type FormEvent, useCallback, useRef, useState } from "react";
import {
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  passwordProblem,
} from "../../lib/shared/password-policy.ts";
import { Field } from "./ui";

export const TOO_SHORT = `Too short: at least ${PASSWORD_MIN_LENGTH} characters`;
export const TOO_LONG = `Too long: at most ${PASSWORD_MAX_LENGTH} characters`;
export const TOO_COMMON = "Too common or too easy to guess: choose a longer one of unrelated words";

/** Why `password` may not be a new password, or undefined; `userInputs` are the person's address and names. */
export async function newPasswordProblem(
  password: string,
  userInputs: string[],
): Promise<string | undefined> {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return TOO_SHORT;
  if (length > PASSWORD_MAX_LENGTH) return TOO_LONG;
  try {
    return (await passwordProblem(password, userInputs)) ? TOO_COMMON : undefined;
  } catch {
    // The estimator's chunk could not load (offline, a new deployment): the API still decides.
    return undefined;
  }
}

const NONE: readonly string[] = [];

/** The values of the named fields of the input's form (the person's address and names). */
const inputsOf = (input: HTMLInputElement, names: readonly string[]) =>
  names.map((name) => {
    const field = input.form?.elements.namedItem(name);
    return field instanceof HTMLInputElement ? field.value : "";
  });

/**
 * A new-password field's check: on leaving the field, then as the person types, the reason shows
 * next to it (`problem`); `beforeSubmit` checks once more and answers whether the form may be sent.
 * `inputNames` name the form's fields holding the person's own details; `options.known` adds
 * details the page already has (a signed-in user's address and names), `options.field` names the
 * password field (default `password`).
 */
export function usePasswordCheck(
  inputNames: readonly string[],
  options: { known?: readonly string[]; field?: string } = {},
) {
  const { known = NONE, field = "password" } = options;
  const [problem, setProblem] = useState<string>();
  const touched = useRef(false);
  const latest = useRef(0);
  const check = useCallback(
    async (input: HTMLInputElement) => {
      const run = ++latest.current;
      const found = await newPasswordProblem(input.value, [...inputsOf(input, inputNames), ...known]);
      // A later keystroke's check wins over an earlier one that finished late.
      if (run === latest.current) setProblem(found);
      return found;
    },
    [inputNames, known],
  );
  return {
    problem,
    onBlur: (event: FocusEvent<HTMLInputElement>) => {
      touched.current = true;
      void check(event.currentTarget);
    },
    onChange: (event: FormEvent<HTMLInputElement>) => {
      if (touched.current) void check(event.currentTarget);
    },
    /** Check the form's password field; false (and the reason shown) when it may not be sent. */
    async beforeSubmit(form: HTMLFormElement): Promise<boolean> {
      const input = form.elements.namedItem(field);
      if (!(input instanceof HTMLInputElement)) return true;
      touched.current = true;
      const found = await check(input);
      if (found) input.focus();
      return !found;
    },
  };
}

/** The hint every new-password field shows. */
export const NEW_PASSWORD_HINT =
  "12 to 256 characters, not a common one: a few unrelated words are easy to remember and hard to guess.";

/**
 * A new-password field (sign-up, reset, change) with its live check: the reason shows next to it
 * before the form is sent, else the API's error for the field (`apiError`).
 */
export function NewPasswordField({
  label,
  name,
  check,
  apiError,
}: {
  label: string;
  name: string;
  check: ReturnType<typeof usePasswordCheck>;
  apiError?: string;
}) {
  return (
    <Field
      label={label}
      name={name}
      type="password"
      autoComplete="new-password"
      required
      hint={NEW_PASSWORD_HINT}
      onBlur={check.onBlur}
      onChange={check.onChange}
      error={check.problem ?? apiError}
    />
  );
}
