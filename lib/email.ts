/** Outbound e-mail through SES v2 in the home region (locally, moto records every message). */
import { SendEmailCommand } from "@aws-sdk/client-sesv2";
import { ses } from "#lib/aws/clients.ts";
import { getConfig } from "./config.ts";

export async function sendEmail(input: {
  /** One address, or several (one message to all of them). */
  to: string | readonly string[];
  subject: string;
  text: string;
  /** Required: every e-mail has a text part and an HTML part (textToHtml makes one from the text). */
  html: string;
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
            Html: { Data: input.html, Charset: "UTF-8" },
          },
        },
      },
    }),
  );
  return result.MessageId ?? "";
}

/** Text made safe to put into HTML (element content and quoted attribute values). */
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The HTML part of an e-mail from its text part: every value escaped, paragraphs at blank lines,
 * line breaks kept, and http(s) links made clickable (the link's text is the URL itself).
 */
export function textToHtml(text: string): string {
  const paragraphs = text
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.trim())
    .filter(Boolean)
    .map((paragraph) =>
      paragraph
        .split("\n")
        .map((line) =>
          line
            // A link ends before trailing punctuation ("Sign in at https://..., or").
            .split(/(https?:\/\/[^\s<>"']*[^\s<>"'.,;:!?)])/)
            .map((part, index) =>
              index % 2 === 1 ? `<a href="${escapeHtml(part)}">${escapeHtml(part)}</a>` : escapeHtml(part),
            )
            .join(""),
        )
        .join("<br>"),
    );
  return `<!doctype html><html><body>${paragraphs.map((p) => `<p>${p}</p>`).join("")}</body></html>`;
}
