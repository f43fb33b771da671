/**
 * A person with an account: signed up and verified through lib/domain/accounts.ts (the
 * verification code read from the e-mail the emulator recorded), so that they can sign in with
 * their e-mail and password (the MCP consent page, the auth routes). No shortcut around the rules.
 */
import { randomBytes } from "node:crypto";
import { getConfig } from "#lib/config.ts";
import { signUp, verifyEmail } from "#lib/domain/accounts.ts";
import { findUserIdByEmail } from "#lib/domain/users.ts";
import { provisionEmailIdentity } from "#local/provision.ts";
import { sentEmails } from "./emulator.ts";

export interface AccountHolder {
  userId: string;
  email: string;
  password: string;
}

/** The code of the newest "Verify your e-mail address" message to `email`. */
export async function verificationCodeOf(email: string): Promise<string> {
  const messages = (await sentEmails(email)).filter((m) => m.subject === "Verify your e-mail address");
  const code = /code is (?:<[^>]*>)?(\d{6})/.exec(messages.at(-1)?.body ?? "")?.[1];
  if (!code) throw new Error(`no verification code e-mailed to ${email}`);
  return code;
}

let senderProvisioned: Promise<void> | undefined;

/** A new verified account with a password (the sender's SES identity provisioned once). */
export async function newAccountHolder(label = "holder"): Promise<AccountHolder> {
  const config = getConfig();
  senderProvisioned ??= provisionEmailIdentity(config.homeRegion, config.emailSender);
  await senderProvisioned;
  const email = `${label}-${randomBytes(6).toString("hex")}@accounts.example.test`;
  const password = `pw-${randomBytes(12).toString("base64url")}`;
  await signUp({ email, password, firstName: "Ada", lastName: "Lovelace" });
  if (!(await verifyEmail({ email, code: await verificationCodeOf(email) })))
    throw new Error(`could not verify ${email}`);
  const userId = await findUserIdByEmail(email);
  if (!userId) throw new Error(`no user for ${email}`);
  return { userId, email, password };
}
