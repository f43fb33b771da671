/**
 * The operators' admin CLI: `npm run admin -- [--local [file]] <command>` (docs/admin-cli.md).
 * stdout carries the command's result and nothing else (one JSON document), so this entry sends
 * every log line to stderr and quiets the AWS SDK's Node 20 notice before anything loads the SDK.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const { logToStderr } = await import("#lib/log.ts");
logToStderr();
const { runAdmin } = await import("./program.ts");
process.exitCode = await runAdmin(process.argv.slice(2));
