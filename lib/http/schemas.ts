/** Request bodies and queries of the account routes (types are inferred from these, never repeated). */
import { z } from "zod";
import { CLIENT_ROLES } from "#lib/shared/roles.ts";
import { queryBoolean, text } from "./validation.ts";

export const ClientName = text(128);

export const CreateClientBody = z
  .object({ clientName: ClientName, returnUser: z.boolean().optional() })
  .strict();
export const UpdateClientBody = z
  .object({ clientName: ClientName, returnUser: z.boolean().optional() })
  .strict();

/** DELETE bodies are optional; the flag may also come as a query parameter. */
export const DeleteBody = z.object({ immediatelyDelete: z.boolean().optional() }).strict().optional();
export const DeleteQuery = z.object({ immediatelyDelete: queryBoolean.optional() });

export const Roles = z
  .array(z.enum(CLIENT_ROLES))
  .min(1, "at least one role is required")
  .max(CLIENT_ROLES.length);
export const UpdateMemberBody = z.object({ roles: Roles }).strict();

export const CreateInviteBody = z
  .object({
    email: z.string().trim().toLowerCase().email("must be an email address").max(254),
    role: z.enum(CLIENT_ROLES),
  })
  .strict();
export const UpdateInviteBody = z
  .object({ roles: Roles.optional(), resend: z.boolean().optional() })
  .strict()
  .refine((body) => body.roles !== undefined || body.resend === true, {
    message: "roles or resend: true is required",
  });
export const AnswerInviteBody = z.object({ acceptInvite: z.boolean() }).strict();
