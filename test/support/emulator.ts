/** What the emulator recorded: the e-mails SES "sent" (moto keeps them, readable over its API). */
export interface SentEmail {
  source: string;
  destinations: { ToAddresses?: string[] };
  subject: string;
  body: string;
}

export async function sentEmails(to?: string): Promise<SentEmail[]> {
  const response = await fetch(`${process.env.AWS_ENDPOINT_URL}/moto-api/data.json`);
  const data = (await response.json()) as { ses?: { Message?: SentEmail[] } };
  const messages = data.ses?.Message ?? [];
  return to ? messages.filter((m) => m.destinations.ToAddresses?.includes(to)) : messages;
}
