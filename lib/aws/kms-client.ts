/**
 * The parts of @aws-sdk/client-kms the gateway uses. lib/aws/clients.ts and lib/vault/envelope.ts
 * load this module with import(), so the data-plane bundle keeps it (tree-shaken to these three
 * names) in a chunk read on the first KMS call, not at a cold start.
 */
export { DecryptCommand, GenerateDataKeyCommand, KMSClient } from "@aws-sdk/client-kms";
