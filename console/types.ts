// The REST answers the console reads (the `data` of the envelope), as proto/enterprise_admin/v1 defines
// them. Counts are JSON numbers; one past 2^53 arrives as a string (api.ts keeps its digits).
export type Count = number | string;

export interface Figures {
  events: Count;
  active_members: Count;
  input_tokens: Count;
  output_tokens: Count;
  basic_amount: string;
  pay_go_amount: string;
  total_amount: string;
}

export interface UsageGroup extends Figures {
  model_name: string;
  model_type: string;
  model_source: string;
  user_id: string;
  email: string;
  department_id: string;
  department_name: string;
}

export interface UsageBucket {
  start_time: number;
  end_time: number;
  date: string;
  groups: UsageGroup[];
}

export interface UsageReport {
  currency: string;
  time_zone: string;
  buckets: UsageBucket[];
  next_page_token: string;
  not_found_user_ids: string[];
  not_found_emails: string[];
}

export interface UsageReportRequest {
  start_time: number;
  end_time: number;
  time_zone?: string;
  bucket?: "day" | "hour" | "none";
  group_by?: ("model" | "member" | "department")[];
  department_id?: string;
  user_ids?: string[];
  emails?: string[];
  page_size?: number;
  page_token?: string;
}

export interface DailyUsage extends Omit<Figures, "active_members" | "events"> {
  date: string;
  active_members: Count;
  events: Count;
}

export interface CoreMetrics {
  currency: string;
  time_zone: string;
  items: DailyUsage[];
}

export interface Department {
  department_id: string;
  parent_department_id: string;
  name: string;
  full_path: string;
  depth: number;
}

export interface DepartmentPage {
  items: Department[];
  next_page_token: string;
}
