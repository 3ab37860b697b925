// Demo usage for `seed --demo`: weekday-heavy dates, each seeded by the date alone, so seeding twice records nothing new.
import { invalidParameter } from "../domain/errors.js";
import { formatMicros } from "../domain/money.js";
import { DAY_SECONDS, localDateOf, localMidnight } from "../domain/local-time.js";
import type { RawUsageEvent } from "../domain/usage-event.js";
import { demoDirectory } from "./directory.js";

const MODELS = [
  { model_name: "atlas-4", model_type: "Chat", model_source: "Builtin", inputMicros: 3, outputMicros: 15 },
  { model_name: "atlas-4-mini", model_type: "Chat", model_source: "Builtin", inputMicros: 1, outputMicros: 4 },
  { model_name: "swift-complete", model_type: "CUE", model_source: "Builtin", inputMicros: 1, outputMicros: 2 },
  { model_name: "demo-finetune-7b", model_type: "Chat", model_source: "Custom", inputMicros: 0, outputMicros: 0 },
] as const;

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

/** Adds one date's events, 09:00 to 19:00 Asia/Shanghai (01:00 to 11:00 UTC, the same date in both); `day`: days since 1970-01-01. */
function addDemoDay(day: number, events: RawUsageEvent[]): void {
  const rand = mulberry32(Math.imul(day, 0x9e3779b1) ^ 0x5eed);
  const date = localDateOf(day * DAY_SECONDS, "UTC");
  const weekday = (day + 3) % 7 < 5; // Monday to Friday: 1970-01-01 (day 0) was a Thursday, day 3 of a week from Monday
  demoDirectory.members.forEach((member, m) => {
    const count = Math.floor(rand() * (weekday ? 12 : 3));
    for (let k = 0; k < count; k++) {
      const model = MODELS[(m + k + Math.floor(rand() * 3)) % MODELS.length]!;
      const input = 500 + Math.floor(rand() * 6000);
      const output = 100 + Math.floor(rand() * 1500);
      const charge = BigInt(input * model.inputMicros + output * model.outputMicros);
      const fromQuota = model.model_source === "Builtin" && rand() < 0.6;
      events.push({
        event_id: `demo-${date}-${member.user_id}-${k}`, user_id: member.user_id,
        model_name: model.model_name, model_type: model.model_type, model_source: model.model_source,
        timestamp: day * DAY_SECONDS + 3600 + Math.floor(rand() * 10 * 3600), input_tokens: input, output_tokens: output,
        basic_amount: fromQuota ? formatMicros(charge) : "0", pay_go_amount: fromQuota ? "0" : formatMicros(charge),
      });
    }
  });
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
