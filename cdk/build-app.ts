/**
 * Builds the whole CDK app: one RegionalStack per configured region and the HomeStack in the home
 * region (deployed after all of them), with the cdk-nag AwsSolutions checks. cdk/app.ts calls it
 * for the CLI; tests call it with bundling disabled.
 */
import { App, Tags } from "aws-cdk-lib";
import { type AppSettings, readAppSettings } from "./app-settings.ts";
import { addNagChecks } from "./nag.ts";
import { HomeStack } from "./stacks/home-stack.ts";
import { RegionalStack } from "./stacks/regional-stack.ts";

export interface BuildAppOptions {
  /** Context of the app (tests pass cdk.json's); the CLI's context (cdk.json, -c) is read as usual. */
  readonly context?: Record<string, unknown>;
  /** false: no stack is bundled (context aws:cdk:bundling-stacks = []), so esbuild never runs. */
  readonly bundling?: boolean;
  /** Register the cdk-nag AwsSolutions checks (default true). */
  readonly nag?: boolean;
  /** Target account; the CLI provides CDK_DEFAULT_ACCOUNT. Stacks stay account-agnostic without it. */
  readonly account?: string;
  /** Directory of the function entry points; defaults to functions/. */
  readonly functionsDir?: string;
  /** The built web console; defaults to console/dist (a placeholder page is deployed without it). */
  readonly consoleDistDir?: string;
  /** Where to write the cloud assembly (defaults to the CLI's, or a temporary directory). */
  readonly outdir?: string;
}

export interface GatewayApp {
  readonly app: App;
  readonly settings: AppSettings;
  /** By region. */
  readonly regionalStacks: Readonly<Record<string, RegionalStack>>;
  readonly homeStack: HomeStack;
}

export const regionalStackName = (settings: Pick<AppSettings, "appName">, region: string) =>
  `${settings.appName}-regional-${region}`;
export const homeStackName = (settings: Pick<AppSettings, "appName">) => `${settings.appName}-home`;

export function buildApp(options: BuildAppOptions = {}): GatewayApp {
  const app = new App({
    context: options.context,
    outdir: options.outdir,
    // After the CLI's context, so that "no bundling" wins over the CLI's default of bundling all.
    postCliContext: options.bundling === false ? { "aws:cdk:bundling-stacks": [] } : undefined,
  });
  const settings = readAppSettings(app.node);
  const account = options.account || undefined;

  const regionalStacks: Record<string, RegionalStack> = {};
  for (const region of settings.regions) {
    regionalStacks[region] = new RegionalStack(app, regionalStackName(settings, region), {
      env: { account, region },
      description: `${settings.appName}: table, KMS key and data plane of ${region}`,
      settings,
      functionsDir: options.functionsDir,
    });
  }

  const homeStack = new HomeStack(app, homeStackName(settings), {
    env: { account, region: settings.homeRegion },
    description: `${settings.appName}: Core API, authorizer, scheduled jobs and web console (home region)`,
    settings,
    functionsDir: options.functionsDir,
    consoleDistDir: options.consoleDistDir,
  });
  for (const regional of Object.values(regionalStacks)) {
    homeStack.addStackDependency(regional, "the home functions use every regional table (by name)");
  }

  Tags.of(app).add("application", settings.appName);
  if (options.nag !== false) addNagChecks(app);
  return { app, settings, regionalStacks, homeStack };
}
