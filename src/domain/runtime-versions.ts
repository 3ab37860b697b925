// The supported language versions: data in one place. Adding a version is adding it to
// its list here; the last entry of a list is the latest, used when a configuration omits the language.

export const RUNTIME_CATALOGUE = [
  { field: "python_version", language: "Python", versions: ["3.10", "3.11", "3.12", "3.13", "3.14"] },
  { field: "node_version", language: "Node.js", versions: ["18", "20", "22", "24"] },
  { field: "go_version", language: "Go", versions: ["1.22.12", "1.23.8", "1.24.3", "1.25.1"] },
  { field: "rust_version", language: "Rust", versions: ["1.83.0", "1.84.0", "1.85.0", "1.86.0", "1.87.0", "1.88.0", "1.89.0", "1.90.0", "1.91.0", "1.92.0"] },
  { field: "java_version", language: "Java", versions: ["11", "17", "21", "22", "23", "24", "25"] },
  { field: "ruby_version", language: "Ruby", versions: ["3.2.3", "3.3.8", "3.4.4"] },
  { field: "php_version", language: "PHP", versions: ["8.2", "8.3", "8.4", "8.5"] },
  { field: "swift_version", language: "Swift", versions: ["5.10", "6.1", "6.2"] },
] as const;

export type PackageField = (typeof RUNTIME_CATALOGUE)[number]["field"];
export type Packages = Partial<Record<PackageField, string>>;

export const latestVersion = (entry: (typeof RUNTIME_CATALOGUE)[number]) => entry.versions[entry.versions.length - 1]!;

/** Every language: the given version, else the latest. */
export function resolvePackages(given: Packages): Record<PackageField, string> {
  return Object.fromEntries(RUNTIME_CATALOGUE.map((entry) => [entry.field, given[entry.field] ?? latestVersion(entry)])) as Record<PackageField, string>;
}
