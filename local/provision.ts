/**
 * Creates what the CDK stacks create, in the emulator: each region's table (from the same
 * definition module the CDK construct uses) with TTL, a KMS key and alias per region, the SES
 * sender identity and the OAuth access-token signing key in the home region. Idempotent: an existing resource is left as it is.
 */
import {
  CreateTableCommand,
  DynamoDBClient,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";
import {
  CreateAliasCommand,
  CreateKeyCommand,
  DescribeKeyCommand,
  EnableKeyRotationCommand,
  KMSClient,
} from "@aws-sdk/client-kms";
import { CreateEmailIdentityCommand, SESv2Client } from "@aws-sdk/client-sesv2";
import { type AppConfig, oauthSigningKeyAlias } from "#lib/config.ts";
import { createTableInput, TTL_ATTRIBUTE } from "#lib/infra/table-definition.ts";

const alreadyExists = (error: unknown, ...names: string[]) =>
  error instanceof Error && names.includes(error.name);

export async function provisionTable(region: string, tableName: string): Promise<void> {
  const client = new DynamoDBClient({ region });
  try {
    await client.send(new CreateTableCommand(createTableInput(tableName)));
    await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: tableName });
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      }),
    );
  } catch (error) {
    if (!alreadyExists(error, "ResourceInUseException")) throw error;
  } finally {
    client.destroy();
  }
}

/** The key behind `alias`, created by `create` (which also names it) when the alias is not there yet. */
async function ensureKey(
  region: string,
  alias: string,
  create: (client: KMSClient) => Promise<string>,
): Promise<string> {
  const client = new KMSClient({ region });
  try {
    const existing = await client.send(new DescribeKeyCommand({ KeyId: alias })).catch((error: unknown) => {
      if (alreadyExists(error, "NotFoundException")) return undefined;
      throw error;
    });
    if (existing?.KeyMetadata?.KeyId) return existing.KeyMetadata.KeyId;
    const keyId = await create(client);
    await client.send(new CreateAliasCommand({ AliasName: alias, TargetKeyId: keyId }));
    return keyId;
  } finally {
    client.destroy();
  }
}

export function provisionKey(region: string, alias: string): Promise<string> {
  return ensureKey(region, alias, async (client) => {
    const key = await client.send(new CreateKeyCommand({ Description: `proxy gateway secrets (${region})` }));
    const keyId = key.KeyMetadata?.KeyId as string;
    await client.send(new EnableKeyRotationCommand({ KeyId: keyId }));
    return keyId;
  });
}

/**
 * The asymmetric key that signs the MCP endpoint's OAuth access tokens (docs/mcp-oauth.md):
 * ECC_NIST_P256 for SIGN_VERIFY (ES256), as in AWS. moto 5 supports CreateKey with this spec, Sign
 * (ECDSA_SHA_256, DER signature as KMS returns it) and GetPublicKey (DER SubjectPublicKeyInfo).
 */
export function provisionSigningKey(region: string, alias: string): Promise<string> {
  return ensureKey(region, alias, async (client) => {
    const key = await client.send(
      new CreateKeyCommand({
        Description: `proxy gateway OAuth access-token signing (${region})`,
        KeySpec: "ECC_NIST_P256",
        KeyUsage: "SIGN_VERIFY",
      }),
    );
    return key.KeyMetadata?.KeyId as string;
  });
}

export async function provisionEmailIdentity(region: string, email: string): Promise<void> {
  const client = new SESv2Client({ region });
  try {
    await client.send(new CreateEmailIdentityCommand({ EmailIdentity: email }));
  } catch (error) {
    if (!alreadyExists(error, "AlreadyExistsException")) throw error;
  } finally {
    client.destroy();
  }
}

export async function provisionStack(config: AppConfig): Promise<void> {
  await Promise.all(
    config.regions.map(async (region) => {
      await provisionTable(region, config.tableName);
      await provisionKey(region, config.kmsKeyAlias);
    }),
  );
  await provisionEmailIdentity(config.homeRegion, config.emailSender);
  // The default signing key (an alias derived from KMS_KEY_ALIAS); a configured one is left alone.
  if (config.oauthSigningKeyId === oauthSigningKeyAlias(config.kmsKeyAlias))
    await provisionSigningKey(config.homeRegion, config.oauthSigningKeyId);
}
