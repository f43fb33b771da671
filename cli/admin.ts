/**
 * The operators' admin CLI: `npm run admin -- [--local [file]] <command>` (docs/admin-cli.md).
 * This entry only quiets the AWS SDK's Node 20 notice before anything loads the SDK, then runs.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const { runAdmin } = await import("./program.ts");
process.exitCode = await runAdmin(process.argv.slice(2));
