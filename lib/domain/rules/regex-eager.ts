/**
 * Installs re2js at start for the Core API modules that validate and compile rule patterns
 * synchronously (rule and predicate schemas, access-rules). The data plane does not import this
 * module: it loads re2js on demand (regex.ts loadRuleEngine), keeping it out of its cold start.
 */
import * as re2js from "re2js";
import { installRuleEngine } from "./regex.ts";

installRuleEngine(re2js);
