/**
 * AWS SDK clients, one per service and region, created once per process (module scope) and reused
 * by every invocation. The endpoint comes from the SDK's own AWS_ENDPOINT_URL support, so the same
 * code talks to AWS, moto or LocalStack.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { KMSClient } from "@aws-sdk/client-kms";
import { SESv2Client } from "@aws-sdk/client-sesv2";
import { type DocumentClient, documentClient } from "../db/document-client.ts";

const documentClients = new Map<string, DocumentClient>();
const kmsClients = new Map<string, KMSClient>();
const sesClients = new Map<string, SESv2Client>();

export function dynamo(region: string): DocumentClient {
  let client = documentClients.get(region);
  if (!client) {
    // Our document client: any key name of a stored map is data (see lib/db/document-client.ts).
    client = documentClient(new DynamoDBClient({ region }));
    documentClients.set(region, client);
  }
  return client;
}

export function kms(region: string): KMSClient {
  let client = kmsClients.get(region);
  if (!client) {
    client = new KMSClient({ region });
    kmsClients.set(region, client);
  }
  return client;
}

export function ses(region: string): SESv2Client {
  let client = sesClients.get(region);
  if (!client) {
    client = new SESv2Client({ region });
    sesClients.set(region, client);
  }
  return client;
}

/** Drop cached clients (tests and the local runner switch endpoints between runs). */
export function resetClients(): void {
  for (const client of documentClients.values()) client.destroy();
  for (const client of kmsClients.values()) client.destroy();
  for (const client of sesClients.values()) client.destroy();
  documentClients.clear();
  kmsClients.clear();
  sesClients.clear();
}
