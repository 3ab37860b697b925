// Table types of the database, shared by every repository. Kysely checks queries against them.
import type { ColumnType, Generated } from "kysely";

/** Unix seconds, stored as a 64-bit integer. */
type UnixSeconds = ColumnType<number, number, number>;

export interface EnterpriseTable {
  enterprise_id: string;
  name: string;
  currency: string;
  /** IANA name; the default zone of the usage analytics. */
  time_zone: string;
  created_at: UnixSeconds;
  /** One more with every directory import of the enterprise (DirectoryRepository.upsertEnterprise). */
  directory_version: Generated<number>;
}

export interface DepartmentTable {
  enterprise_id: string;
  department_id: string;
  parent_department_id: string;
  name: string;
  /** foldName(name) (domain/text-rules.ts), computed in TypeScript so keyword search folds case the same on every database. */
  name_folded: string;
  full_path: string;
  depth: number;
}

export interface MemberTable {
  member_key: Generated<number>;
  enterprise_id: string;
  user_id: string;
  email: string;
  /** foldEmail(email) (domain/email-match.ts): letters lower-cased by one-to-one case pairs only. */
  email_folded: string;
  account_type: number;
  /** When `import directory --prune` removed the member (Unix seconds); null for a current member. */
  removed_at: UnixSeconds | null;
}

export interface MemberDepartmentTable {
  enterprise_id: string;
  user_id: string;
  department_id: string;
}

export interface AppTable {
  app_id: string;
  enterprise_id: string;
  name: string;
  /** SHA-256 (hex) of the app secret; the secret itself is never stored. */
  secret_hash: string;
  /** Permissions, comma-separated, sorted. */
  permissions: string;
  created_at: UnixSeconds;
  revoked_at: UnixSeconds | null;
}

export interface AccessTokenTable {
  /** SHA-256 (hex) of the token; the token itself is never stored. */
  token_hash: string;
  /** Random and unique, for listing and revoking; not derived from the token. */
  token_id: string;
  /** The app that obtained it; null for a token made by `token create`. */
  app_id: string | null;
  enterprise_id: string;
  permissions: string;
  created_at: UnixSeconds;
  expires_at: UnixSeconds;
  revoked_at: UnixSeconds | null;
}

export interface UsageModelTable {
  model_id: Generated<number>;
  model_name: string;
  model_type: string;
  model_source: string;
}

/**
 * Raw events, kept for idempotency (event_id) and audit, and read for the partial days of a window.
 * Ordered by (day, member_key, ts): new events land in the current day's pages, and a member's events
 * of one day are one range.
 */
export interface UsageEventTable {
  day: number;
  member_key: number;
  ts: number;
  event_id: string;
  enterprise_id: string;
  model_id: number;
  input_tokens: Int64Column;
  output_tokens: Int64Column;
  basic_micros: Int64Column;
  pay_go_micros: Int64Column;
}

/**
 * A member's running totals per model: every event of the member up to the end of `day` (a UTC
 * day on which the member has events), packed by usage-sums-codec.ts. On SQLite
 * ordered by (day, member_key), so that the rows of today share pages, and found by member through
 * the unique index (member_key, day); on PostgreSQL a heap with the primary key (member_key, day).
 */
export interface UsageRunningTotalTable {
  member_key: number;
  day: number;
  totals: Uint8Array;
}

/**
 * An enterprise's usage layout: the version of its pre-aggregates (running totals and rollups) and
 * which zone its hour and day rollups follow (src/domain/usage-rollup.ts, RollupLayout).
 */
export interface UsageLayoutTable {
  enterprise_id: string;
  version: number;
  time_zone: string;
  hour_phase: number;
}

/** An enterprise's usage in one period of a grain, for one model (0: all of them); see usage-rollup.ts. */
export interface UsageRollupTable {
  enterprise_id: string;
  grain: number;
  period: number;
  model_id: number;
  member_count: number;
  /** "input output basic pay_go events", decimal. */
  sums: string;
}

/** A usage_rollup row's members, under the same key. */
export interface UsageRollupMembersTable {
  enterprise_id: string;
  grain: number;
  period: number;
  model_id: number;
  /** The member keys, a portable roaring bitmap. */
  members: Uint8Array;
  /** On a day's ALL_MODELS row: each member's sums of the day (storage/member-day-sums.ts); else null. */
  member_sums: Uint8Array | null;
}

/** An ingestion's events not yet added to the rollups (storage/usage-rollups.ts). */
export interface UsageRollupPendingTable {
  enterprise_id: string;
  /** The store's count of ingestions when it was written. */
  ingestion: number;
  event_count: number;
  /** "member_key,model_id,ts,input,output,basic,pay_go" per event, joined by ";". */
  events: string;
}

/** 64-bit integers written as bigint; read back as text by the aggregations, never as a float. */
type Int64Column = ColumnType<string, bigint | string, bigint | string>;

export interface EnvironmentConfigTable {
  id: string;
  enterprise_id: string;
  name: string;
  description: string;
  /** JSON of the languages as given. */
  preinstalled_packages: string;
  /** JSON of { install, start, terminals }. */
  runtime_config: string;
  /** JSON of the plain variables. */
  environment_variables: string;
  created_at_ms: number;
  updated_at_ms: number;
  /** Bumped by every update; an update names the revision it read (optimistic concurrency). */
  revision: number;
  etag: string;
}

export interface EnvironmentDataKeyTable {
  environment_id: string;
  master_key_id: string;
  /** The environment's AES-256 data key, encrypted under the master key. */
  wrapped_key: Buffer;
}

export interface EnvironmentSecretTable {
  environment_id: string;
  key: string;
  /** AES-256-GCM under the environment's data key; never the clear value. */
  sealed_value: Buffer;
}

/** One row (id 1): the master key that wraps new data keys; every other key is retired. */
export interface MasterKeyRingTable {
  id: number;
  current_master_key_id: string;
}

/** One row (id 1): the usage ingestions committed so far, each chunk of an import included. */
export interface UsageIngestionCountTable {
  id: number;
  ingestions: number;
}

/**
 * A master key a rotation of this database added to the key source (made current, or about to be).
 * Retired when another key is made current; removed from the key file once no data key needs it.
 */
export interface MasterKeyTable {
  id: string;
  added_at_ms: number;
  retired_at_ms: number | null;
  removed_at_ms: number | null;
}

export interface Schema {
  enterprise: EnterpriseTable;
  department: DepartmentTable;
  member: MemberTable;
  member_department: MemberDepartmentTable;
  app: AppTable;
  access_token: AccessTokenTable;
  usage_model: UsageModelTable;
  usage_event: UsageEventTable;
  usage_running_total: UsageRunningTotalTable;
  usage_ingestion_count: UsageIngestionCountTable;
  usage_layout: UsageLayoutTable;
  usage_rollup: UsageRollupTable;
  usage_rollup_members: UsageRollupMembersTable;
  usage_rollup_pending: UsageRollupPendingTable;
  environment_config: EnvironmentConfigTable;
  environment_data_key: EnvironmentDataKeyTable;
  environment_secret: EnvironmentSecretTable;
  master_key_ring: MasterKeyRingTable;
  master_key: MasterKeyTable;
}

