/**
 * Which new passwords are refused (docs/accounts.md "Passwords"): besides the length rule
 * (lib/shared/passwords.ts), a password that is common, breached-list-like or easy to guess, as
 * ASVS v5 6.2.4 and NIST SP 800-63B 3.1.1.2 ask. The estimator is zxcvbn-ts with its common-password
 * dictionary (`@zxcvbn-ts/language-common`: about 30,000 passwords from breach lists, plus names,
 * words, keyboard patterns, dates and l33t speak), loaded on first use so that nothing that never
 * checks a new password (the data plane, the authorizer) pays for its 2 MB.
 *
 * The same rule runs in the console before a form is sent (console/src imports `passwordProblem`
 * lazily), and on the server for sign-up, reset and change, which decide.
 */

/** New passwords are 12 to 256 characters (Unicode code points, not bytes), checked before the estimator. */
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 256;

/** zxcvbn's score: 0 (too guessable) to 4 (very unguessable). 3 is "safely unguessable" (about 10^8 guesses and more). */
export const MIN_PASSWORD_SCORE = 3;

export const COMMON_PASSWORD_PROBLEM =
  "this password is too common or too easy to guess; choose a longer one of unrelated words";

type Checker = (password: string, userInputs: string[]) => { score: number; warning: string | null };

let checker: Promise<Checker> | undefined;

async function loadChecker(): Promise<Checker> {
  const [{ ZxcvbnFactory }, common] = await Promise.all([
    import("@zxcvbn-ts/core"),
    import("@zxcvbn-ts/language-common"),
  ]);
  const zxcvbn = new ZxcvbnFactory({
    dictionary: { ...common.dictionary },
    graphs: common.adjacencyGraphs,
  });
  return (password, userInputs) => {
    const result = zxcvbn.check(password, userInputs);
    return { score: result.score, warning: result.feedback.warning };
  };
}

/**
 * Why `password` may not be used as a new password, or undefined when it may. `userInputs` are the
 * person's own details (e-mail address, names): a password built from them is easier to guess.
 * Only the length-valid passwords reach this (the length rule is checked first, by the schema).
 */
export async function passwordProblem(
  password: string,
  userInputs: string[] = [],
): Promise<string | undefined> {
  checker ??= loadChecker();
  const check = await checker;
  // zxcvbn only looks at the first 100 characters (its own bound on matching cost); a longer
  // password is judged by them, which can only make it look weaker, never stronger.
  const inputs = userInputs
    .flatMap((input) => {
      const lower = input.toLowerCase();
      // "ada.lovelace@example.org": the whole, each part, and the name part joined ("adalovelace").
      const name = lower.split("@")[0] ?? "";
      return [input, ...lower.split(/[@.\s_+-]+/), name.replace(/[.\s_+-]+/g, "")];
    })
    .filter(Boolean);
  // The names written together ("AdaLovelace"), as people often do.
  const names = userInputs.filter((input) => !input.includes("@")).map((input) => input.trim().toLowerCase());
  if (names.length > 1) inputs.push(names.join(""));
  const { score } = check(password.slice(0, 100), inputs);
  return score < MIN_PASSWORD_SCORE ? COMMON_PASSWORD_PROBLEM : undefined;
}
