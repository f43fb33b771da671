/**
 * A software WebAuthn authenticator and client for tests (docs/accounts.md, "Passkeys"): what a
 * browser and a platform authenticator do between the options of the server and the JSON response
 * `@simplewebauthn/browser` sends back. P-256 keys (ES256) from node:crypto, "none" attestation,
 * discoverable credentials (the user handle is kept and returned), a signature counter per
 * credential. Every part can be bent (origin, relying-party id, counter) to test refusals.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import { isoCBOR } from "@simplewebauthn/server/helpers";

const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest();
const b64u = (data: Uint8Array) => Buffer.from(data).toString("base64url");
const uint32 = (value: number) => {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value);
  return bytes;
};

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_AT = 0x40;

export interface SoftwareCredential {
  id: Buffer;
  rpId: string;
  userHandle: string;
  privateKey: KeyObject;
  counter: number;
}

interface CreationOptions {
  challenge: string;
  rp: { id?: string; name: string };
  user: { id: string };
  excludeCredentials?: { id: string }[];
}
interface RequestOptions {
  challenge: string;
  rpId?: string;
}

export interface CeremonyOverrides {
  /** The origin the client reports (default: the authenticator's origin). */
  origin?: string;
  /** The relying-party id whose hash goes into the authenticator data (default: the options'). */
  rpId?: string;
  /** The signature counter to report (default: the credential's next one). */
  counter?: number;
  /** The credential to use for a sign-in (default: the newest of the relying party). */
  credential?: SoftwareCredential;
  /** The challenge the client reports (default: the options'). */
  challenge?: string;
}

export class SoftwareAuthenticator {
  readonly credentials: SoftwareCredential[] = [];

  /** `origin`: where the "browser" is (the client data's origin). `counterStep`: 0 for an authenticator without a counter. */
  constructor(
    readonly origin: string,
    readonly counterStep = 1,
  ) {}

  /** `navigator.credentials.create` + startRegistration: the RegistrationResponseJSON for `options`. */
  register(options: CreationOptions, overrides: CeremonyOverrides = {}) {
    const rpId = overrides.rpId ?? options.rp.id ?? new URL(this.origin).hostname;
    const excluded = new Set((options.excludeCredentials ?? []).map((descriptor) => descriptor.id));
    if (this.credentials.some((credential) => excluded.has(b64u(credential.id)) && credential.rpId === rpId))
      throw new Error("InvalidStateError: the authenticator already holds an excluded credential");
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const jwk = publicKey.export({ format: "jwk" });
    const cosePublicKey = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(String(jwk.x), "base64url")],
        [-3, Buffer.from(String(jwk.y), "base64url")],
      ]),
    );
    const credential: SoftwareCredential = {
      id: randomBytes(32),
      rpId,
      userHandle: options.user.id,
      privateKey,
      counter: 0,
    };
    const counter = overrides.counter ?? 0;
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(credential.id.length);
    const authData = Buffer.concat([
      sha256(rpId),
      Buffer.from([FLAG_UP | FLAG_UV | FLAG_AT]),
      uint32(counter),
      Buffer.alloc(16), // AAGUID: none
      idLength,
      credential.id,
      cosePublicKey,
    ]);
    const attestationObject = isoCBOR.encode(
      new Map<string, string | Uint8Array | Map<string, string>>([
        ["fmt", "none"],
        ["attStmt", new Map<string, string>()],
        ["authData", new Uint8Array(authData)],
      ]),
    );
    const clientDataJSON = JSON.stringify({
      type: "webauthn.create",
      challenge: overrides.challenge ?? options.challenge,
      origin: overrides.origin ?? this.origin,
      crossOrigin: false,
    });
    credential.counter = counter;
    this.credentials.push(credential);
    return {
      credential,
      response: {
        id: b64u(credential.id),
        rawId: b64u(credential.id),
        type: "public-key",
        response: {
          clientDataJSON: b64u(Buffer.from(clientDataJSON)),
          attestationObject: b64u(attestationObject),
          transports: ["internal"],
        },
        authenticatorAttachment: "platform",
        clientExtensionResults: {},
      },
    };
  }

  /** `navigator.credentials.get` + startAuthentication (discoverable): the AuthenticationResponseJSON for `options`. */
  authenticate(options: RequestOptions, overrides: CeremonyOverrides = {}) {
    const rpId = options.rpId ?? new URL(this.origin).hostname;
    const credential =
      overrides.credential ?? this.credentials.filter((candidate) => candidate.rpId === rpId).at(-1);
    if (!credential) throw new Error("NotAllowedError: no credential for this relying party");
    const counter = overrides.counter ?? credential.counter + this.counterStep;
    credential.counter = Math.max(credential.counter, counter);
    const authData = Buffer.concat([
      sha256(overrides.rpId ?? rpId),
      Buffer.from([FLAG_UP | FLAG_UV]),
      uint32(counter),
    ]);
    const clientDataJSON = Buffer.from(
      JSON.stringify({
        type: "webauthn.get",
        challenge: overrides.challenge ?? options.challenge,
        origin: overrides.origin ?? this.origin,
        crossOrigin: false,
      }),
    );
    // ES256: an ECDSA signature over authData || SHA-256(clientDataJSON), DER-encoded (node's default).
    const signature = sign(
      "sha256",
      Buffer.concat([authData, sha256(clientDataJSON)]),
      credential.privateKey,
    );
    return {
      id: b64u(credential.id),
      rawId: b64u(credential.id),
      type: "public-key",
      response: {
        clientDataJSON: b64u(clientDataJSON),
        authenticatorData: b64u(authData),
        signature: b64u(signature),
        userHandle: credential.userHandle,
      },
      authenticatorAttachment: "platform",
      clientExtensionResults: {},
    };
  }
}
