/**
 * The commands of the admin CLI (docs/admin-cli.md). Each one parses its arguments, calls the
 * domain module that owns the rule, and prints JSON on stdout. Failures: one line on stderr, exit 1.
 */

import { Argument, Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { resetClients } from "#lib/aws/clients.ts";
import { MSP_BILLING_STATUSES } from "#lib/db/entities/msp.ts";
import { sendSetPasswordEmail } from "#lib/domain/accounts.ts";
import {
  FEATURE_OVERRIDE_VALUES,
  getClientOverrides,
  PROMO_OVERRIDE_VALUES,
  setClientOverrides,
  UpdateOverridesBody,
} from "#lib/domain/feature-overrides.ts";
import { createMsp, listMspMembers, requireMsp, setMspBillingStatus, setMspRates } from "#lib/domain/msps.ts";
import { createNotification, toApiNotification } from "#lib/domain/notifications.ts";
import { PLAN_STATUSES, PLAN_TIERS, type PlanTier } from "#lib/domain/plans.ts";
import { issueToken, listTokens, revokeToken, type StoredTokenRef } from "#lib/domain/tokens.ts";
import { createUser, findUserIdByEmail, requireUser, setSystemAdmin, toApiUser } from "#lib/domain/users.ts";
import { notFound } from "#lib/http/errors.ts";
import { NOTIFICATION_TYPES, type NotificationType } from "#lib/shared/notification-types.ts";
import { backfillPaymentCustomers } from "./backfill-payment-customers.ts";
import { BILLING_STATUSES, type PlanStatus, setClientBillingStatus, setClientPlan } from "./client-plan.ts";
import { applyLocalStack, DEFAULT_STACK_FILE, normalizeLocalFlag, resolveStackFile } from "./environment.ts";
import { CliError, describeError } from "./errors.ts";

const RUN = "npm run admin --";

export const TOKEN_WARNING =
  "warning: store this token now: it is shown only this once and cannot be recovered (only revoked)";

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

function example(command: Command, ...lines: string[]): Command {
  return command.addHelpText(
    "after",
    `\nExample${lines.length > 1 ? "s" : ""}:\n${lines.map((l) => `  $ ${RUN} ${l}`).join("\n")}\n`,
  );
}

function requireText() {
  return (value: string): string => {
    const trimmed = value.trim();
    if (!trimmed) throw new InvalidArgumentError("It must not be empty.");
    return trimmed;
  };
}

async function userIdOf(userIdOrEmail: string): Promise<string> {
  if (!userIdOrEmail.includes("@")) return userIdOrEmail;
  const userId = await findUserIdByEmail(userIdOrEmail.trim());
  if (!userId) throw notFound("User not found");
  return userId;
}

function usersCommand(program: Command): void {
  const users = program
    .command("users")
    .description("create and inspect users; grant or revoke system admin");

  example(
    users
      .command("create")
      .description(
        "create a user (e-mail addresses are unique) and print it; the address gets an e-mail to set a password (a code valid 24 hours)",
      )
      .requiredOption("--email <email>", "e-mail address (unique, stored lower-cased)")
      .requiredOption("--first-name <name>", "first name")
      .requiredOption("--last-name <name>", "last name")
      .option("--username <username>", "username (default: the e-mail address)")
      .option("--phone <phone>", "phone number")
      .option(
        "--no-password-email",
        "do not send the set-password e-mail (the user can use forgot-password later)",
      )
      .action(
        async (options: {
          email: string;
          firstName: string;
          lastName: string;
          username?: string;
          phone?: string;
          passwordEmail: boolean;
        }) => {
          const user = await createUser({
            email: options.email,
            firstName: options.firstName,
            lastName: options.lastName,
            username: options.username,
            phone: options.phone,
          });
          if (options.passwordEmail) await sendSetPasswordEmail(String(user.userId), user.userEmail);
          print(toApiUser(user));
        },
      ),
    "users create --email ada@example.com --first-name Ada --last-name Lovelace",
  );

  example(
    users
      .command("get")
      .description("print a user, found by id or by e-mail address")
      .argument("<userIdOrEmail>", "user id, or e-mail address")
      .action(async (userIdOrEmail: string) => {
        print(toApiUser(await requireUser(await userIdOf(userIdOrEmail))));
      }),
    "users get ada@example.com",
    "users get 0b6c3f1e-2f4e-4c55-9d8e-0a1b2c3d4e5f",
  );

  example(
    users
      .command("grant-system-admin")
      .description("make a user a system administrator (platform-wide operator rights)")
      .argument("<userId>", "user id")
      .action(async (userId: string) => {
        print(toApiUser(await setSystemAdmin(userId, true)));
      }),
    "users grant-system-admin 0b6c3f1e-2f4e-4c55-9d8e-0a1b2c3d4e5f",
  );

  example(
    users
      .command("revoke-system-admin")
      .description("take system administrator rights away from a user")
      .argument("<userId>", "user id")
      .action(async (userId: string) => {
        print(toApiUser(await setSystemAdmin(userId, false)));
      }),
    "users revoke-system-admin 0b6c3f1e-2f4e-4c55-9d8e-0a1b2c3d4e5f",
  );
}

function tokensCommand(program: Command): void {
  const tokens = program.command("tokens").description("issue, list and revoke user API tokens");

  example(
    tokens
      .command("issue")
      .description("issue an API token for a user and print it: the only time the raw token is shown")
      .argument("<userId>", "user id")
      .option("--name <name>", "a name to recognise the token by (as the user's own token list shows it)")
      .action(async (userId: string, options: { name?: string }) => {
        const issued = await issueToken(userId, { tokenName: options.name?.trim() ?? "" });
        process.stderr.write(`${TOKEN_WARNING}\n`);
        print({
          userId,
          tokenId: issued.tokenId,
          tokenName: issued.tokenName,
          token: issued.token,
          masked: issued.masked,
        });
      }),
    "tokens issue 0b6c3f1e-2f4e-4c55-9d8e-0a1b2c3d4e5f",
  );

  example(
    tokens
      .command("list")
      .description("list a user's tokens (id, name, masked value, creation time; never the raw token)")
      .argument("<userId>", "user id")
      .action(async (userId: string) => {
        const user = await requireUser(userId);
        print({ userId, tokens: listTokens(user.tokens as Record<string, StoredTokenRef> | undefined) });
      }),
    "tokens list 0b6c3f1e-2f4e-4c55-9d8e-0a1b2c3d4e5f",
  );

  example(
    tokens
      .command("revoke")
      .description("revoke one of a user's tokens: it stops working at once")
      .argument("<userId>", "user id")
      .argument("<tokenId>", "token id (tokens list shows them)")
      .action(async (userId: string, tokenId: string) => {
        await revokeToken(userId, tokenId);
        print({ userId, tokenId, revoked: true });
      }),
    "tokens revoke 0b6c3f1e-2f4e-4c55-9d8e-0a1b2c3d4e5f tok_3f9a1c2b4d5e6f70",
  );
}

function mspsCommand(program: Command): void {
  const msps = program.command("msps").description("create and inspect managed-service providers (MSPs)");

  example(
    msps
      .command("create")
      .description("create an MSP with its configuration and its first msp_owner (one transaction)")
      .requiredOption("--name <name>", "MSP name")
      .requiredOption("--owner <userId>", "user id of the first msp_owner (the user must exist)")
      .action(async (options: { name: string; owner: string }) => {
        print(await createMsp({ name: options.name, ownerUserId: options.owner }));
      }),
    'msps create --name "Northwind Managed IT" --owner 0b6c3f1e-2f4e-4c55-9d8e-0a1b2c3d4e5f',
  );

  example(
    msps
      .command("get")
      .description("print an MSP with its configuration and members")
      .argument("<mspId>", "MSP id")
      .action(async (mspId: string) => {
        const [found, members] = await Promise.all([requireMsp(mspId), listMspMembers(mspId)]);
        print({ ...found, members });
      }),
    "msps get 7d1e0c9a-5b3f-4a2e-8c6d-1f2e3d4c5b6a",
  );

  example(
    msps
      .command("set-rates")
      .description(
        "set the MSP's own rates: the fraction of retail it pays per metric, in (0, 1] (operators only; omitted metrics keep their value)",
      )
      .argument("<mspId>", "MSP id")
      .option("--api-seconds <fraction>", "rate for API seconds", rateArgument)
      .option("--storage-gb <fraction>", "rate for storage (GB)", rateArgument)
      .option("--ai-tokens <fraction>", "rate for AI tokens", rateArgument)
      .option("--plan <fraction>", "rate for the plan", rateArgument)
      .action(
        async (
          mspId: string,
          options: { apiSeconds?: number; storageGb?: number; aiTokens?: number; plan?: number },
        ) => {
          const rates = {
            apiSeconds: options.apiSeconds,
            storageGB: options.storageGb,
            aiTokens: options.aiTokens,
            plan: options.plan,
          };
          if (Object.values(rates).every((value) => value === undefined))
            throw new CliError("give at least one of --api-seconds, --storage-gb, --ai-tokens, --plan");
          print(await setMspRates(mspId, rates));
        },
      ),
    "msps set-rates 7d1e0c9a-5b3f-4a2e-8c6d-1f2e3d4c5b6a --api-seconds 0.75 --plan 0.8",
  );

  example(
    msps
      .command("set-billing")
      .description("suspend or reactivate an MSP's billing (its billingStatus)")
      .argument("<mspId>", "MSP id")
      .addArgument(new Argument("<status>", "billing status").choices(MSP_BILLING_STATUSES))
      .action(async (mspId: string, status: (typeof MSP_BILLING_STATUSES)[number]) => {
        print(await setMspBillingStatus(mspId, status));
      }),
    "msps set-billing 7d1e0c9a-5b3f-4a2e-8c6d-1f2e3d4c5b6a suspended",
  );
}

/** A rate: a number in (0, 1]. */
function rateArgument(value: string): number {
  const rate = Number(value);
  if (!Number.isFinite(rate) || rate <= 0 || rate > 1)
    throw new InvalidArgumentError("It must be a number greater than 0 and at most 1.");
  return rate;
}

function clientsCommand(program: Command): void {
  const clients = program.command("clients").description("operator changes to clients (organisations)");

  example(
    clients
      .command("set-plan")
      .description("move a client to a plan tier (sets planTier on its configuration)")
      .argument("<clientId>", "client id")
      .addArgument(new Argument("<tier>", "plan tier").choices(PLAN_TIERS))
      .addOption(new Option("--status <planStatus>", "also set planStatus").choices(PLAN_STATUSES))
      .action(async (clientId: string, tier: PlanTier, options: { status?: PlanStatus }) => {
        print(await setClientPlan(clientId, tier, options.status));
      }),
    "clients set-plan 5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d team",
    "clients set-plan 5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d team --status active",
  );

  example(
    clients
      .command("set-billing")
      .description("suspend or reactivate a client's billing (the data plane answers 402 while suspended)")
      .argument("<clientId>", "client id")
      .addArgument(new Argument("<status>", "billing status").choices(BILLING_STATUSES))
      .action(async (clientId: string, status: (typeof BILLING_STATUSES)[number]) => {
        print(await setClientBillingStatus(clientId, status));
      }),
    "clients set-billing 5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d suspended",
  );

  example(
    clients
      .command("get-overrides")
      .description("print a client's feature and promo overrides")
      .argument("<clientId>", "client id")
      .action(async (clientId: string) => {
        print(await getClientOverrides(clientId));
      }),
    "clients get-overrides 5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d",
  );

  example(
    clients
      .command("set-overrides")
      .description(
        'replace a client\'s feature and/or promo overrides (docs/billing.md "Overrides"); a list not given stays',
      )
      .argument("<clientId>", "client id")
      .addOption(
        new Option("--feature <value...>", "the feature overrides (replace the list)").choices(
          FEATURE_OVERRIDE_VALUES,
        ),
      )
      .addOption(
        new Option("--promo <value...>", "the promo overrides (replace the list)").choices(
          PROMO_OVERRIDE_VALUES,
        ),
      )
      .addOption(new Option("--clear-features", "remove every feature override").conflicts("feature"))
      .addOption(new Option("--clear-promos", "remove every promo override").conflicts("promo"))
      .action(
        async (
          clientId: string,
          options: { feature?: string[]; promo?: string[]; clearFeatures?: boolean; clearPromos?: boolean },
        ) => {
          const input = UpdateOverridesBody.parse({
            featureOverrides: options.clearFeatures ? [] : options.feature,
            promoOverrides: options.clearPromos ? [] : options.promo,
          });
          if (input.featureOverrides === undefined && input.promoOverrides === undefined)
            throw new CliError("give at least one of --feature, --promo, --clear-features, --clear-promos");
          print(await setClientOverrides(clientId, input));
        },
      ),
    "clients set-overrides 5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d --feature core_api_rate_limit_x10",
    "clients set-overrides 5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d --clear-features --promo extended_trial",
  );
}

function backfillCommand(program: Command): void {
  example(
    program
      .command("backfill-payment-customers")
      .description(
        "add the GSI1 keys PAYMENTCUSTOMER#<id> to client configurations created before them, so the Stripe webhook finds those clients (a paged Scan of the home table; conditional, idempotent; prints counts)",
      )
      .option("--dry-run", "only count and list the clients that lack the keys; change nothing")
      .addOption(
        new Option(
          "--page-size <items>",
          "items the Scan reads per page (default: DynamoDB's 1 MB pages)",
        ).argParser(pageSizeArgument),
      )
      .action(async (options: { dryRun?: boolean; pageSize?: number }) => {
        print(await backfillPaymentCustomers(options));
      }),
    "backfill-payment-customers --dry-run",
    "backfill-payment-customers",
  );
}

/** A page size: a whole number from 1 to 1000. */
function pageSizeArgument(value: string): number {
  const size = Number(value);
  if (!Number.isInteger(size) || size < 1 || size > 1000)
    throw new InvalidArgumentError("It must be a whole number from 1 to 1000.");
  return size;
}

function notificationsCommand(program: Command): void {
  const notifications = program.command("notifications").description("platform-wide notifications");

  example(
    notifications
      .command("send-system")
      .description("send a system notification (platform-wide: every user sees it)")
      .requiredOption("--title <title>", "title", requireText())
      .requiredOption("--message <message>", "message text", requireText())
      .addOption(
        new Option("--type <type>", "notification type").choices(NOTIFICATION_TYPES).default("system"),
      )
      .action(async (options: { title: string; message: string; type: NotificationType }) => {
        const scope = { kind: "system" } as const;
        const item = await createNotification(scope, {
          type: options.type,
          title: options.title,
          message: options.message,
        });
        print(toApiNotification(item, scope));
      }),
    'notifications send-system --title "Maintenance" --message "The Core API is read-only on Sunday 02:00-03:00 UTC"',
  );
}

export function buildProgram(): Command {
  const program = new Command("admin")
    .usage("[--local [file]] <command> [options]")
    .description(
      "Operators' admin CLI of the proxy gateway: prints JSON on stdout, errors on stderr (exit 1)",
    )
    .option(
      "--local [file]",
      "use the local stack described in a stack file (default: .local/stack.json, written by npm start)",
    )
    .option("--debug", "print the stack trace of an unexpected error")
    .enablePositionalOptions()
    .showSuggestionAfterError(false)
    .exitOverride();
  example(
    program,
    "--local users get local-admin@localhost.localdomain",
    "users create --email ada@example.com --first-name Ada --last-name Lovelace",
  );
  program.hook("preAction", () => {
    const { local } = program.opts<{ local?: string | boolean }>();
    if (local) applyLocalStack(typeof local === "string" ? resolveStackFile(local) : DEFAULT_STACK_FILE);
  });
  usersCommand(program);
  tokensCommand(program);
  mspsCommand(program);
  clientsCommand(program);
  notificationsCommand(program);
  backfillCommand(program);
  return program;
}

/** Run the CLI on `args` (without node and the script); returns the exit code. */
export async function runAdmin(args: readonly string[]): Promise<number> {
  const program = buildProgram();
  const commandNames = new Set([...program.commands.map((c) => c.name()), "help"]);
  try {
    await program.parseAsync(normalizeLocalFlag(args, commandNames), { from: "user" });
    return 0;
  } catch (error) {
    // Commander has already printed its usage error (one line) or the help text.
    if (error instanceof CommanderError) return error.exitCode;
    const described = describeError(error);
    const debug = program.opts<{ debug?: boolean }>().debug === true;
    process.stderr.write(
      `error: ${described.message}${described.expected || debug ? "" : " (--debug shows the stack trace)"}\n`,
    );
    if (!described.expected && debug && error instanceof Error) process.stderr.write(`${error.stack}\n`);
    return 1;
  } finally {
    resetClients();
  }
}
