// The rules of an environment configuration (docs/api-rules.md, Environment configurations), checked
// at write time on the whole configuration as it would be stored. Messages name the field and the
// limit, and never contain a secret's value.
import { invalidParameter } from "./errors.js";
import { RUNTIME_CATALOGUE, type Packages } from "./runtime-versions.js";
import { characters, nameProblem } from "./text-rules.js";

export const LIMITS = {
  nameCharacters: 64,
  secrets: 50,
  environmentVariables: 100,
  scriptBytes: 10_240,
  terminals: 10,
  terminalCommandBytes: 4_096,
  variableKeyCharacters: 256,
  variableValueBytes: 32_768,
  descriptionCharacters: 4_096,
} as const;

export const NETWORK_POLICY = {
  mode: 1,
  allowlist_policy: 0,
  common_dependencies: ["npm", "pypi", "maven", "goproxy", "rubygems", "packagist", "crates", "docker", "github", "gitlab"],
} as const;

const KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface Terminal {
  name: string;
  command: string;
  description: string;
}

export interface RuntimeConfig {
  install: string;
  start: string;
  terminals: Terminal[];
}

/** A configuration as it will be stored, secrets in clear (they are sealed right after the check). */
export interface EnvironmentDraft {
  name: string;
  description: string;
  preinstalledPackages: Packages;
  runtimeConfig: RuntimeConfig;
  environmentVariables: Record<string, string>;
  secrets: Record<string, string>;
}

const bytes = (text: string) => Buffer.byteLength(text, "utf8");

export function checkEnvironmentDraft(draft: EnvironmentDraft): void {
  checkName(draft.name);
  if (characters(draft.description) > LIMITS.descriptionCharacters) {
    throw invalidParameter(`description: ${characters(draft.description)} characters > ${LIMITS.descriptionCharacters}`);
  }
  checkPackages(draft.preinstalledPackages);
  checkRuntime(draft.runtimeConfig);
  checkVariables("environment_variables", draft.environmentVariables, LIMITS.environmentVariables, true);
  checkVariables("secrets", draft.secrets, LIMITS.secrets, false);
  for (const key of Object.keys(draft.secrets)) {
    if (Object.hasOwn(draft.environmentVariables, key)) {
      throw invalidParameter(`secrets.${key}: the key is also an environment variable; a key can be one or the other`);
    }
  }
}

export function checkName(name: string): void {
  if (name.trim() === "") throw invalidParameter(`name: required, 1 to ${LIMITS.nameCharacters} characters`);
  if (characters(name) > LIMITS.nameCharacters) throw invalidParameter(`name: ${characters(name)} characters > ${LIMITS.nameCharacters}`);
  const problem = nameProblem(name);
  if (problem) throw invalidParameter(`name: ${problem}`);
}

function checkPackages(packages: Packages): void {
  for (const entry of RUNTIME_CATALOGUE) {
    const version = packages[entry.field];
    if (version !== undefined && !(entry.versions as readonly string[]).includes(version)) {
      throw invalidParameter(`preinstalled_packages.${entry.field}: ${JSON.stringify(version)} is not supported; supported ${entry.language} versions: ${entry.versions.join(", ")}`);
    }
  }
}

function checkRuntime(runtime: RuntimeConfig): void {
  for (const script of ["install", "start"] as const) {
    const size = bytes(runtime[script]);
    if (size > LIMITS.scriptBytes) throw invalidParameter(`runtime_config.${script}: ${size} bytes > ${LIMITS.scriptBytes} (10 KB of UTF-8)`);
  }
  if (runtime.terminals.length > LIMITS.terminals) {
    throw invalidParameter(`runtime_config.terminals: ${runtime.terminals.length} terminals > ${LIMITS.terminals}`);
  }
  const names = new Set<string>();
  runtime.terminals.forEach((terminal, i) => {
    const at = `runtime_config.terminals[${i}]`;
    if (terminal.name.trim() === "") throw invalidParameter(`${at}.name: required (a non-empty name)`);
    const problem = nameProblem(terminal.name);
    if (problem) throw invalidParameter(`${at}.name: ${problem}`);
    if (terminal.command.trim() === "") throw invalidParameter(`${at}.command: required (the command the terminal runs)`);
    if (names.has(terminal.name)) throw invalidParameter(`${at}.name: ${JSON.stringify(terminal.name)} is used by another terminal; names are unique`);
    names.add(terminal.name);
    const size = bytes(terminal.command);
    if (size > LIMITS.terminalCommandBytes) throw invalidParameter(`${at}.command: ${size} bytes > ${LIMITS.terminalCommandBytes} (4 KB of UTF-8)`);
  });
}

function checkVariables(field: string, variables: Record<string, string>, limit: number, showValues: boolean): void {
  const keys = Object.keys(variables);
  if (keys.length > limit) throw invalidParameter(`${field}: ${keys.length} keys > ${limit}`);
  for (const key of keys) {
    if (!KEY_PATTERN.test(key)) throw invalidParameter(`${field}: key ${JSON.stringify(key)} must match [A-Za-z_][A-Za-z0-9_]*`);
    if (characters(key) > LIMITS.variableKeyCharacters) throw invalidParameter(`${field}: key ${JSON.stringify(key.slice(0, 32))}… is longer than ${LIMITS.variableKeyCharacters} characters`);
    const size = bytes(variables[key]!);
    // A secret's value is never echoed, not even its start.
    if (size > LIMITS.variableValueBytes) {
      throw invalidParameter(`${field}.${key}: value of ${size} bytes > ${LIMITS.variableValueBytes}${showValues ? "" : " (value not shown)"}`);
    }
  }
}

/** A supplied network policy must be exactly the fixed one. */
export function checkNetworkPolicy(policy: { mode: number; allowlistPolicy: number; commonDependencies: readonly string[] }): void {
  const same = policy.mode === NETWORK_POLICY.mode && policy.allowlistPolicy === NETWORK_POLICY.allowlist_policy
    && policy.commonDependencies.length === NETWORK_POLICY.common_dependencies.length
    && [...policy.commonDependencies].sort().join(",") === [...NETWORK_POLICY.common_dependencies].sort().join(",");
  if (!same) {
    throw invalidParameter(`network_policy: the policy is fixed and cannot be customized; it is mode 1, allowlist_policy 0, common_dependencies ${NETWORK_POLICY.common_dependencies.join(", ")}`);
  }
}
