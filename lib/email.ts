/** Outbound e-mail through SES v2 in the home region (locally, moto records every message). */
import { SendEmailCommand } from "@aws-sdk/client-sesv2";
import { ses } from "#lib/aws/clients.ts";
import { getConfig } from "./config.ts";

export async function sendEmail(input: {
  /** One address, or several (one message to all of them). */
  to: string | readonly string[];
  subject: string;
  text: string;
  html?: string;
}): Promise<string> {
  const config = getConfig();
  const result = await ses(config.homeRegion).send(
    new SendEmailCommand({
      FromEmailAddress: config.emailSender,
      Destination: { ToAddresses: typeof input.to === "string" ? [input.to] : [...input.to] },
      Content: {
        Simple: {
          Subject: { Data: input.subject, Charset: "UTF-8" },
          Body: {
            Text: { Data: input.text, Charset: "UTF-8" },
            ...(input.html ? { Html: { Data: input.html, Charset: "UTF-8" } } : {}),
          },
        },
      },
    }),
  );
  return result.MessageId ?? "";
}
