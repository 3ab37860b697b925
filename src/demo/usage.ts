// Demo usage for `seed --demo`: weekday-heavy dates, each seeded by the date alone, so seeding twice records nothing new.
import { invalidParameter } from "../domain/errors.js";
import { formatMicros } from "../domain/money.js";
import { DAY_SECONDS, localDateOf, localMidnight } from "../domain/local-time.js";
import type { RawUsageEvent } from "../domain/usage-event.js";
import { demoDirectory } from "./directory.js";

const MODELS = [
  { model_name: "atlas-4", model_type: "Chat", model_source: "Builtin", inputMicros: 3, outputMicros: 15, input: [2000, 9000], output: [300, 2000] },
  { model_name: "atlas-4-mini", model_type: "Chat", model_source: "Builtin", inputMicros: 1, outputMicros: 4, input: [800, 4000], output: [100, 1000] },
  { model_name: "swift-complete", model_type: "CUE", model_source: "Builtin", inputMicros: 1, outputMicros: 2, input: [200, 1200], output: [10, 120] },
  { model_name: "demo-finetune-7b", model_type: "Chat", model_source: "Custom", inputMicros: 0, outputMicros: 0, input: [1000, 6000], output: [200, 1500] },
] as const;

/**
 * How each member works, by user_id: events on an average weekday, and how often each of MODELS (in
 * order) is their pick. Heavy and light users, completion-heavy tooling and a fine-tuned model's research
 * user, so that the reports rank something.
 */
const HABITS: Readonly<Record<string, { weekday: number; models: readonly number[] }>> = {
  "7001": { weekday: 14, models: [5, 2, 3, 0] },
  "7002": { weekday: 10, models: [2, 4, 4, 0] },
  "7003": { weekday: 18, models: [1, 1, 8, 0] },
  "7004": { weekday: 3, models: [0, 5, 1, 0] },
  "7005": { weekday: 2, models: [1, 4, 0, 0] },
  "7006": { weekday: 1, models: [0, 1, 0, 0] },
  "7007": { weekday: 8, models: [2, 0, 1, 6] },
};

export const DEMO_USAGE_DAYS = 90;

/** Today's date in the demo enterprise's zone: the default "as of" date. */
export const demoToday = (nowMs = Date.now()) => localDateOf(Math.floor(nowMs / 1000), demoDirectory.enterprise.time_zone!);

/** The demo's events of the DEMO_USAGE_DAYS dates ending with `asOf` (YYYY-MM-DD, included), the CLI's --as-of. */
export function demoUsageEvents(asOf: string): RawUsageEvent[] {
  const last = localMidnight(asOf, "UTC", "--as-of").toSeconds() / DAY_SECONDS;
  if (last < DEMO_USAGE_DAYS) throw invalidParameter(`--as-of: ${asOf} is too early: the demo's ${DEMO_USAGE_DAYS} days must start on 1970-01-02 or later`);
  const events: RawUsageEvent[] = [];
  for (let day = last - DEMO_USAGE_DAYS + 1; day <= last; day++) addDemoDay(day, events);
  return events;
}

/**
 * Adds one date's events, 09:00 to 19:00 Asia/Shanghai (01:00 to 11:00 UTC, the same date in both); `day`: days since 1970-01-01.
 * Weekends are quiet, and use swells and ebbs over the year, so a quarter's trend moves.
 */
function addDemoDay(day: number, events: RawUsageEvent[]): void {
  const rand = mulberry32(Math.imul(day, 0x9e3779b1) ^ 0x5eed);
  const date = localDateOf(day * DAY_SECONDS, "UTC");
  const weekday = (day + 3) % 7 < 5; // Monday to Friday: 1970-01-01 (day 0) was a Thursday, day 3 of a week from Monday
  const season = 1 + 0.3 * Math.sin((2 * Math.PI * day) / 365.25);
  const between = (range: readonly [number, number]) => range[0] + Math.floor(rand() * (range[1] - range[0]));
  for (const member of demoDirectory.members) {
    const habit = HABITS[member.user_id]!;
    const count = Math.floor(rand() * 2 * habit.weekday * season * (weekday ? 1 : 0.15));
    const picks = habit.models.reduce((sum, weight) => sum + weight, 0);
    for (let k = 0; k < count; k++) {
      const model = MODELS[weightedIndex(habit.models, rand() * picks)]!;
      const input = between(model.input);
      const output = between(model.output);
      const charge = BigInt(input * model.inputMicros + output * model.outputMicros);
      const fromQuota = model.model_source === "Builtin" && rand() < 0.6;
      events.push({
        event_id: `demo-${date}-${member.user_id}-${k}`, user_id: member.user_id,
        model_name: model.model_name, model_type: model.model_type, model_source: model.model_source,
        timestamp: day * DAY_SECONDS + 3600 + Math.floor(rand() * 10 * 3600), input_tokens: input, output_tokens: output,
        basic_amount: fromQuota ? formatMicros(charge) : "0", pay_go_amount: fromQuota ? "0" : formatMicros(charge),
      });
    }
  }
}

/** The index of the weight that `draw`, in [0, the weights' sum), falls in when the weights are laid end to end. */
function weightedIndex(weights: readonly number[], draw: number): number {
  let index = 0;
  for (let end = weights[0]!; draw >= end; end += weights[index]!) index++;
  return index;
}

/** mulberry32: a small 32-bit generator, uniform in [0, 1); the same seed gives the same sequence. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
